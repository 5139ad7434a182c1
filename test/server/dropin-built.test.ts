/**
 * Issue 35's "done when", against the built server (`node dist/cli.js serve` with its default
 * engines, pocketsphinx and espeak-ng from the system library, started by test/product/built-server.ts with its memory
 * watchdog): the STT options the service's Python client documents, the refusals, billing of the
 * client's audio only, and the TTS details (frame_size, one default voice, 80 ms G.711 chunks,
 * temp 0 byte-identical on the system espeak-ng). The same scenarios run in-process in test/server/stt-options.test.ts
 * and tts-dropin.test.ts. Seen failing first on the build before issue 35 (each title says how).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBuiltServer, wsSession, type BuiltServer, stopBuiltServer } from '../product/built-server.js';
import { describeBuilt } from '../product/describe-built.js';
import { has } from '../helpers/tools.js';
import { audioMessages, costOf, DOCUMENTED_DELAYS, flushedPieces, postAsr, setup, silence, sttSession, type SttTarget } from './stt-options-scenarios.js';

const WATCHDOG = 1.5 * 2 ** 30;

describeBuilt('issue 35 against the built server (default engines)', () => {
  let s: BuiltServer | undefined;
  let dir: string;
  let t: SttTarget;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'voicewire-dropin-built-'));
    // espeak-ng from the system library, the engine every install without the optional WebAssembly
    // package gets (issue 35 item 5), where it is installed; pocketsphinx for STT.
    s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: WATCHDOG, credits: 1000, args: has('espeak-ng') ? ['--tts', 'espeak-system'] : [] });
    t = { base: s.base, wsBase: s.wsBase, key: s.key };
  }, 150_000);
  afterAll(async () => {
    await stopBuiltServer(s, dir);
  }, 30_000);

  it('every documented delay_in_frames is ready\'s, with temp and padding_bonus (seen failing first: delay 7 and 24, temp 0.3 refused at setup)', async () => {
    for (const d of DOCUMENTED_DELAYS) {
      const m = await sttSession(t, [setup({ delay_in_frames: d, temp: 0.3, padding_bonus: -1 }), ...audioMessages(silence(0.16)), { type: 'end_of_stream' }]);
      expect(m[0], `delay ${d}`).toMatchObject({ type: 'ready', delay_in_frames: d });
      // The end pushed d frames of silence behind the 2 frames of audio: a step each.
      expect(m.filter((x) => x['type'] === 'step'), `delay ${d}`).toHaveLength(2 + d);
      expect(m.at(-1)).toMatchObject({ type: 'end_of_stream' });
    }
  }, 120_000);

  it('out-of-range values are refused alike for every key: 422 on POST, error 1008 on the socket (seen failing first: delay_in_frames 2 on POST was 500 "error from server 1008")', async () => {
    for (const [key, value] of [['delay_in_frames', 2], ['temp', 1.2], ['padding_bonus', 0.05], ['beam', 4]] as const) {
      const r = await postAsr(t, silence(0.08), JSON.stringify({ [key]: value }));
      expect(r.status, `${key}: ${r.body}`).toBe(422);
      expect((JSON.parse(r.body) as { detail: Array<{ loc: unknown[] }> }).detail[0]!.loc).toEqual(['query', 'json_config', key]);
      const m = await sttSession(t, [setup({ [key]: value }), ...audioMessages(silence(0.08)), { type: 'end_of_stream' }]);
      expect(m).toEqual([expect.objectContaining({ type: 'error', code: 1008 })]);
    }
  }, 60_000);

  it('0.96 s costs 1 credit with 0, 1 or 3 flushes, and at delay 48; 2.00 s POST costs 2 (seen failing first: 2, 3, 5 and 3)', async () => {
    for (const flushes of [0, 1, 3] as const) {
      expect(await costOf(t, 1, () => sttSession(t, [setup(), ...flushedPieces(flushes), { type: 'end_of_stream' }])), `${flushes} flushes`).toBe(1);
    }
    expect(await costOf(t, 1, () => sttSession(t, [setup({ delay_in_frames: 48 }), ...flushedPieces(1), { type: 'end_of_stream' }]))).toBe(1);
    expect(await costOf(t, 2, () => postAsr(t, silence(2)))).toBe(2);
  }, 120_000);

  it('TTS: frame_size at the output rate, 80 ms ulaw_8000 chunks from the first, no voice = "default", temp 0 byte-identical (seen failing first: 3840, 589 samples, another voice, three outputs)', async () => {
    const ws = (extra: Record<string, unknown>, text = 'Good morning, this is the default voice.') =>
      wsSession(`${t.wsBase}/speech/tts`, { 'x-api-key': t.key }, [{ type: 'setup', output_format: 'ulaw_8000', json_config: { temp: 0 }, ...extra }, { type: 'text', text }, { type: 'end_of_stream' }]);
    const bytesOf = (m: Array<Record<string, unknown>>) => m.filter((x) => x['type'] === 'audio').map((x) => Buffer.from(String(x['audio']), 'base64')).filter((b) => b.length > 0);
    const none = await ws({});
    expect(none[0]).toMatchObject({ type: 'ready', sample_rate: 8000, frame_size: 640 });
    const chunks = bytesOf(none);
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunks.slice(0, -1).every((b) => b.length === 640), chunks.map((b) => b.length).join(',')).toBe(true);
    const again = [await ws({}), await ws({ voice_id: 'default' }), await ws({ voice_id: 'YTpq7expH9539ERJ' })].map((m) => Buffer.concat(bytesOf(m)));
    for (const a of again) expect(a.equals(Buffer.concat(chunks))).toBe(true);
    const jack = Buffer.concat(bytesOf(await ws({ voice_id: 'm86j6D7UZpGzHsNu' })));
    expect(jack.equals(Buffer.concat(chunks))).toBe(false);
  }, 120_000);
});
