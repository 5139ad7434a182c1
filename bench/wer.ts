/**
 * Word error rate: (substitutions + deletions + insertions) / reference words, from a minimum
 * edit-distance alignment (Levenshtein over words, every edit costing 1, as NIST sclite's
 * default). Text is compared lower-cased with punctuation other than apostrophes removed.
 */

/** Counts of one alignment. */
export interface WerCounts {
  ref: number;
  sub: number;
  del: number;
  ins: number;
  /** Reference words matched exactly. */
  cor: number;
}

/** Words of a transcript as compared: lower case, no punctuation except apostrophes, no `<s>` markers. */
export function normalizeWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/<\/?s>|\([^)]*\)$/g, ' ')
    .replace(/[^\p{L}\p{N}'\s]/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/** Aligns `hyp` to `ref` (word arrays). Among equal-cost alignments, prefers substitutions, then deletions (as sclite). */
export function alignWords(ref: readonly string[], hyp: readonly string[]): WerCounts {
  const n = ref.length;
  const m = hyp.length;
  // cost[i][j] = [edits, sub, del, ins]
  type Cell = [number, number, number, number];
  let prev: Cell[] = Array.from({ length: m + 1 }, (_, j) => [j, 0, 0, j]);
  for (let i = 1; i <= n; i++) {
    const cur: Cell[] = [[i, 0, i, 0]];
    for (let j = 1; j <= m; j++) {
      const same = ref[i - 1] === hyp[j - 1];
      const d = prev[j - 1]!;
      const diag: Cell = [d[0] + (same ? 0 : 1), d[1] + (same ? 0 : 1), d[2], d[3]];
      const u = prev[j]!;
      const del: Cell = [u[0] + 1, u[1], u[2] + 1, u[3]];
      const l = cur[j - 1]!;
      const ins: Cell = [l[0] + 1, l[1], l[2], l[3] + 1];
      cur.push([diag, del, ins].reduce((a, b) => (b[0] < a[0] ? b : a)));
    }
    prev = cur;
  }
  const [, sub, del, ins] = prev[m]!;
  return { ref: n, sub, del, ins, cor: n - sub - del };
}

/** WER of one or many pairs (pooled over words, as sclite's summary). */
export function wordErrorRate(pairs: readonly (readonly [ref: string, hyp: string])[]): WerCounts & { wer: number } {
  const total: WerCounts = { ref: 0, sub: 0, del: 0, ins: 0, cor: 0 };
  for (const [r, h] of pairs) {
    const c = alignWords(normalizeWords(r), normalizeWords(h));
    total.ref += c.ref;
    total.sub += c.sub;
    total.del += c.del;
    total.ins += c.ins;
    total.cor += c.cor;
  }
  return { ...total, wer: total.ref === 0 ? 0 : (total.sub + total.del + total.ins) / total.ref };
}
