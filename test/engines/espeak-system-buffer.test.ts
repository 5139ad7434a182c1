/**
 * The system library's output buffer (issue 34): a voice whose output does not depend on the
 * buffer length gets 1000 ms of audio per callback (one hop to the main thread a second instead
 * of ten); a voice with an echo or the Klatt synthesizer, or a rate where libsonic may run, keeps
 * the 100 ms it always had. That both give the same frames and word times is
 * espeak-system-golden.test.ts (German: a long buffer; English: the default voice's echo).
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { bufferNeutral, loadSystemEspeak } from '../../src/engines/espeak-system.js';
import { has, needs } from '../helpers/tools.js';

/** The data folder the espeak-ng command (and so the library) reads: `Data at: …` in its version line. */
function dataFolder(): string | undefined {
  try {
    return /Data at:\s*(\S+)/.exec(execFileSync('espeak-ng', ['--version'], { encoding: 'utf8' }))?.[1];
  } catch {
    return undefined;
  }
}
const TEXT = 'Seven children watched from their small wooden boat, and they laughed at the morning light.';

/** Pieces of audio the library hands over for `TEXT`, and its seconds of audio. */
async function pieces(voice: string, rate: number): Promise<{ calls: number; seconds: number }> {
  const w = await loadSystemEspeak();
  w.set_voice(voice);
  w.set_rate(rate);
  let calls = 0;
  let samples = 0;
  await w.synthesize(TEXT, (s) => {
    if (s.length > 0) calls++;
    samples += s.length;
    return false;
  });
  return { calls, seconds: samples / w.get_samplerate() };
}

describe.skipIf(!has('espeak-ng'))(needs('espeak-ng', 'the system library’s audio per callback'), () => {
  it('a variant with an echo or Klatt, an unreadable one or a name that is not one keeps the short buffer', () => {
    const DATA = dataFolder();
    expect(DATA).toBeDefined();
    expect(bufferNeutral('en-us', DATA)).toBe(true);
    expect(bufferNeutral('en-us+m3', DATA)).toBe(true);
    expect(bufferNeutral('de+f1', DATA)).toBe(true);
    expect(bufferNeutral('en-us+f2', DATA)).toBe(false); // echo 140 10
    expect(bufferNeutral('en-us+david', DATA)).toBe(false); // klatt 6
    expect(bufferNeutral('en-us+no-such-variant', DATA)).toBe(false);
    expect(bufferNeutral('en-us+../../lang/roa/fr', DATA)).toBe(false);
    expect(bufferNeutral('en-us+m3', undefined)).toBe(false);
  });

  it('a neutral voice: about one callback per second of audio; an echo voice or a fast rate: about ten', async () => {
    const neutral = await pieces('en-us+m3', 175);
    // Each clause ends its own piece: 2 clauses, ~5 s.
    expect(neutral.calls).toBeLessThanOrEqual(Math.ceil(neutral.seconds) + 3);
    const echo = await pieces('en-us+f2', 175);
    expect(echo.calls).toBeGreaterThanOrEqual(Math.floor(echo.seconds * 9));
    const fast = await pieces('en-us+m3', 400);
    expect(fast.calls).toBeGreaterThanOrEqual(Math.floor(fast.seconds * 9));
  });
});
