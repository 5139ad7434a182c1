/**
 * Speech compared with an oracle's (the `espeak-ng` command) by loudness over time: the same
 * words give envelopes that correlate, whatever the samples.
 */

/** 25 ms RMS envelope of the sound, pauses left out (windows below 3 % of the loudest). */
export function envelope(pcm: Int16Array, rate: number): number[] {
  const win = Math.round(rate / 40);
  const env: number[] = [];
  for (let i = 0; i + win <= pcm.length; i += win) {
    let s = 0;
    for (let j = i; j < i + win; j++) s += pcm[j]! * pcm[j]!;
    env.push(Math.sqrt(s / win));
  }
  const max = Math.max(...env);
  return env.filter((e) => e > max * 0.03);
}

/** Pearson correlation of two envelopes, the second stretched to the first's length. */
export function correlation(a: number[], b: number[]): number {
  const bs = a.map((_, i) => b[Math.min(b.length - 1, Math.round((i * (b.length - 1)) / Math.max(1, a.length - 1)))]!);
  const mean = (x: number[]) => x.reduce((p, q) => p + q, 0) / x.length;
  const [ma, mb] = [mean(a), mean(bs)];
  let [num, da, db] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) {
    num += (a[i]! - ma) * (bs[i]! - mb);
    da += (a[i]! - ma) ** 2;
    db += (bs[i]! - mb) ** 2;
  }
  return num / Math.sqrt(da * db);
}
