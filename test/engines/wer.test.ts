import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alignWords, normalizeWords, wordErrorRate } from '../../bench/wer.js';
import { has } from '../helpers/tools.js';

const REF = 'the cat sat on the mat today';
const HYP = 'the cat sat at the mat to day now';

describe('word error rate (bench/stt-accuracy.ts)', () => {
  it('a hand-computed case: 1 substitution, 1 substitution + 1 insertion for "today", 1 insertion', () => {
    // ref:  the cat sat ON the mat TODAY  *   *
    // hyp:  the cat sat AT the mat TO    DAY NOW   → S=2 (on→at, today→to), I=2 (day, now), D=0
    expect(alignWords(normalizeWords(REF), normalizeWords(HYP))).toEqual({ ref: 7, sub: 2, del: 0, ins: 2, cor: 5 });
    expect(wordErrorRate([[REF, HYP]]).wer).toBeCloseTo(4 / 7, 10);
    expect(alignWords(['a', 'b', 'c'], [])).toEqual({ ref: 3, sub: 0, del: 3, ins: 0, cor: 0 });
    expect(normalizeWords('<s> Mister, John\'s! </s> (utt-1)')).toEqual(['mister', "john's"]);
  });

  const sclite = has('sclite') ? 'sclite' : has('/usr/lib/sctk/bin/sclite') ? '/usr/lib/sctk/bin/sclite' : undefined;
  it.skipIf(sclite === undefined)(sclite ? 'agrees with NIST sclite (sctk) on the same case (oracle: sctk)' : 'agrees with sclite [SKIPPED: sctk not installed]', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wer-'));
    try {
      const pairs: [string, string][] = [[REF, HYP], ['he was not an ill disposed young man', 'he was not a nil disposed young man'], ['one two three', 'one three']];
      writeFileSync(join(dir, 'ref.trn'), pairs.map(([r], i) => `${r} (spk1_u${i})\n`).join(''));
      writeFileSync(join(dir, 'hyp.trn'), pairs.map(([, h], i) => `${h} (spk1_u${i})\n`).join(''));
      const out = execFileSync(sclite!, ['-r', join(dir, 'ref.trn'), 'trn', '-h', join(dir, 'hyp.trn'), 'trn', '-i', 'spu_id', '-o', 'sum', 'stdout'], { encoding: 'utf8' });
      // The summary line: | Sum/Avg | #Snt #Wrd | Corr Sub Del Ins Err S.Err |
      const line = out.split('\n').find((l) => l.includes('Sum/Avg'))!;
      const nums = line.match(/-?\d+(\.\d+)?/g)!.map(Number);
      const ours = wordErrorRate(pairs);
      expect(nums[1]).toBe(ours.ref);
      const pct = (x: number) => Math.round((x / ours.ref) * 1000) / 10;
      expect(nums.slice(3, 7)).toEqual([pct(ours.sub), pct(ours.del), pct(ours.ins), Math.round(ours.wer * 1000) / 10]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
