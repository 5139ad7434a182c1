/**
 * temp 0 on the system espeak-ng when its private copy cannot be made (issue 35: a temporary
 * folder that cannot be written or is mounted noexec): the request is spoken on the shared
 * instance (not bit-identical, docs/engines.md), never failed. A file of its own: the system
 * worker is one per process, and this test breaks its temporary folder before its first use.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { has, needs } from '../helpers/tools.js';
import { speak, testContext, voiceOf } from './espeak-helpers.js';

const saved = process.env['TMPDIR'];
afterAll(() => {
  if (saved === undefined) delete process.env['TMPDIR'];
  else process.env['TMPDIR'] = saved;
});

describe.skipIf(!has('espeak-ng'))(needs('espeak-ng', 'temp 0 over the system library without a usable temporary folder'), () => {
  it('a temp-0 request is spoken on the shared instance, twice, instead of failing', async () => {
    process.env['TMPDIR'] = '/nonexistent/voicewire-test';
    for (let i = 0; i < 2; i++) {
      const r = await speak(['Hello there.'], { voiceId: voiceOf('en'), jsonConfig: { temp: 0 } }, testContext(), { library: 'system' });
      expect(r.pcm.length).toBeGreaterThan(4800);
      expect(r.words.map((w) => w.text)).toEqual(['Hello', 'there.']);
    }
  });
});
