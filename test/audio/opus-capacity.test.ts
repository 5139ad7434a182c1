/**
 * The Opus instance cap, the pool's high-water mark, crash containment, and the native backend
 * (issue 11 §1, issue 12 §2). Small limits are set for the test and restored after each.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  OPUS_DEFAULT_MAX_INSTANCES,
  OPUS_DEFAULT_POOL_HIGH_WATER_MARK,
  OpusDecoder,
  OpusEncoder,
  opusStats,
  setOpusBackend,
  setOpusLimits,
  type OpusBackend,
} from '../../src/audio/opus.js';
import { breakWasmModuleForTest } from '../../src/audio/opus-wasm.js';
import { decodeOggOpus, encodeOggOpus, OggOpusDecoder } from '../../src/audio/ogg-opus.js';
import { createSttAudioDecoder } from '../../src/pipelines/stt-audio-decoder.js';
import { nativeOpusBackend } from '../../src/node/opus-native.js';
import { VoicewireError } from '../../src/util/errors.js';
import { caught } from '../helpers/errors.js';
import { has, needs, run, runText } from '../helpers/tools.js';

const speech = (() => {
  const wav = readFileSync(new URL('../../fixtures/speech/en_48k.wav', import.meta.url));
  const at = wav.indexOf('data') + 8;
  return new Int16Array(wav.buffer.slice(wav.byteOffset + at, wav.byteOffset + wav.length));
})();
const frame = speech.subarray(48000, 48960);
const b64 = (b: ArrayBufferView): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

const native = nativeOpusBackend();
const backends: [string, OpusBackend | 'wasm' | undefined][] = [['wasm', 'wasm'], ['native', native]];

/** A fresh encoder's packet and a fresh decoder's PCM for the same frame: what must come back after any failure. */
function reference(): { packet: string; pcm: string } {
  const e = new OpusEncoder({ bitrate: 32000 });
  const d = new OpusDecoder();
  const packet = e.encode(frame);
  const pcm = d.decode(packet);
  e.destroy();
  d.destroy();
  return { packet: b64(packet), pcm: b64(pcm) };
}

afterEach(() => {
  setOpusLimits({ maxInstances: OPUS_DEFAULT_MAX_INSTANCES, poolHighWaterMark: OPUS_DEFAULT_POOL_HIGH_WATER_MARK });
  setOpusBackend(undefined);
});

for (const [name, choice] of backends) {
  const missing = choice === undefined;
  describe.skipIf(missing)(missing ? `${name} backend [SKIPPED: @evan/opus (optional dependency) is not installed or does not load here]` : `${name} backend`, () => {
    beforeEach(() => setOpusBackend(choice));

    it('refuses instances beyond maxInstances with OPUS_CAPACITY (1011) before libopus is asked; after destroying them the next encode and decode are bit-identical to before', () => {
      const want = reference();
      const base = opusStats();
      setOpusLimits({ maxInstances: base.encoders + base.decoders + 40, poolHighWaterMark: 4 });
      const live: (OpusEncoder | OpusDecoder)[] = [];
      for (let i = 0; i < 20; i++) live.push(new OpusEncoder({ sampleRate: 24000 }), new OpusDecoder({ sampleRate: 48000, channels: 2 }));
      const handlers = opusStats().handlers;
      for (const make of [() => new OpusEncoder(), () => new OpusDecoder({ sampleRate: 24000 })]) {
        const err = caught(make);
        expect(err.code).toBe('OPUS_CAPACITY');
        expect(err.closeCode).toBe(1011);
      }
      expect(opusStats().handlers).toBe(handlers); // refused before libopus allocated anything
      expect(opusStats().refused - base.refused).toBe(2);
      for (const x of live) x.destroy();
      expect(opusStats().pooled).toBeLessThanOrEqual(4);
      expect(reference()).toEqual(want);
    });

    it('a pool above its high-water mark gives memory back: 300 destroyed 48 kHz stereo decoders leave at most 8 idle', () => {
      setOpusLimits({ poolHighWaterMark: 8 });
      const before = opusStats();
      const ds = Array.from({ length: 300 }, () => new OpusDecoder({ channels: 2 }));
      for (const d of ds) d.destroy();
      const after = opusStats();
      expect(after.pooled).toBeLessThanOrEqual(8);
      if (name === 'wasm') expect(after.handlers - before.handlers).toBeLessThanOrEqual(8);
      // Other shapes still get instances (the pool of one shape starves no other).
      expect(reference().packet.length).toBeGreaterThan(0);
    });

    it('encodes an Ogg Opus stream that decodes back to the input length', () => {
      const input = speech.subarray(0, 48000);
      const ogg = encodeOggOpus(input, { serial: 1 });
      expect(decodeOggOpus(ogg).pcm.length).toBe(input.length);
    });
  });
}

describe('crash containment', () => {
  it('a backend that throws a raw RuntimeError (a wasm trap) gives VoicewireErrors with close code 1011, and the next instance works', () => {
    const want = reference();
    const trap = (): never => {
      throw new WebAssembly.RuntimeError('divide by zero');
    };
    const broken: OpusBackend = {
      name: 'broken',
      description: 'a backend that traps',
      createEncoder: () => ({ encode: trap, set: () => 0, get: () => 312, free: () => undefined }),
      createDecoder: () => ({ decode: trap, set: () => 0, get: trap, free: () => undefined }),
    };
    setOpusBackend(broken);
    const e = new OpusEncoder();
    const d = new OpusDecoder();
    for (const [fn, code] of [
      [() => e.encode(frame), 'OPUS_ENCODER_ERROR'],
      [() => d.decode(Uint8Array.of(0xfc, 0xff, 0xfe)), 'OPUS_DECODER_ERROR'],
      [() => d.getGain(), 'OPUS_DECODER_ERROR'],
    ] as const) {
      const err = caught(fn);
      expect(err.code).toBe(code);
      expect(err.closeCode).toBe(1011);
      expect(err.cause).toBeInstanceOf(WebAssembly.RuntimeError);
    }
    e.destroy();
    d.destroy();
    const creation: OpusBackend = { ...broken, createEncoder: () => { throw new Error('Aborted(OOM)'); } };
    setOpusBackend(creation);
    expect(caught(() => new OpusEncoder()).code).toBe('OPUS_CAPACITY');
    setOpusBackend('wasm');
    expect(reference()).toEqual(want);
    expect(opusStats().pooled).toBeLessThanOrEqual(OPUS_DEFAULT_POOL_HIGH_WATER_MARK);
  });

  it('after a trap in the wasm module, its instances fail with VoicewireErrors and new instances run in a fresh module, bit-identical', () => {
    setOpusBackend('wasm');
    const want = reference();
    const e = new OpusEncoder({ bitrate: 32000 });
    const d = new OpusDecoder();
    breakWasmModuleForTest();
    expect(caught(() => e.encode(frame)).closeCode).toBe(1011);
    expect(caught(() => d.decode(Uint8Array.of(0xfc))).closeCode).toBe(1011);
    e.destroy();
    d.destroy();
    expect(reference()).toEqual(want);
  });
});

describe('the STT input decoder under the cap', () => {
  it('reports OPUS_CAPACITY (1011), not an audio error blamed on the client (1008), when the process is full', () => {
    setOpusBackend('wasm');
    const ogg = encodeOggOpus(speech.subarray(0, 4800), { serial: 5 });
    const base = opusStats();
    setOpusLimits({ maxInstances: base.encoders + base.decoders + 3 });
    const decs = Array.from({ length: 5 }, () => createSttAudioDecoder('opus'));
    const outcomes: string[] = [];
    for (const dec of decs) {
      try {
        dec.pushBase64(Buffer.from(ogg.subarray(0, ogg.length - 10)).toString('base64')); // no EOS yet: the decoder stays live
        outcomes.push('ok');
      } catch (err) {
        expect(err).toBeInstanceOf(VoicewireError);
        outcomes.push(`${(err as VoicewireError).code}/${(err as VoicewireError).closeCode}`);
      }
    }
    expect(outcomes).toEqual(['ok', 'ok', 'ok', 'OPUS_CAPACITY/1011', 'OPUS_CAPACITY/1011']);
    for (const dec of decs) dec.destroy();
    const again = createSttAudioDecoder('opus');
    expect(again.pushBase64(Buffer.from(ogg).toString('base64')).length + again.flush().length).toBe(2); // 100 ms: one 80 ms frame and a padded one
    again.destroy();
  });
});

describe.skipIf(native === undefined || !has(['opusinfo', 'opusdec']))(
  needs(['opusinfo', 'opusdec'], native === undefined ? 'native and wasm streams [SKIPPED: @evan/opus not installed]' : 'native and wasm streams pass opus-tools'),
  () => {
    const tmp = mkdtempSync(join(tmpdir(), 'vw-opus-native-'));
    afterAll(() => rmSync(tmp, { recursive: true, force: true }));
    for (const [name, choice] of backends) {
      it(`${name}: opusinfo reports no warning or error; opusdec outputs the input length; voicewire decodes it on both backends alike`, () => {
        setOpusBackend(choice);
        const input = speech.subarray(0, 3 * 48000 + 123);
        const ogg = encodeOggOpus(input, { serial: 9, bitrate: 32000 });
        const path = join(tmp, `${name}.opus`);
        writeFileSync(path, ogg);
        const info = runText('opusinfo', [path]);
        expect(info).toContain('Processing file');
        expect(info).not.toMatch(/warning|error/i);
        run('opusdec', ['--quiet', '--rate', '48000', path, `${path}.raw`]);
        expect(readFileSync(`${path}.raw`).length).toBe(input.length * 2);
        const viaWasm = (setOpusBackend('wasm'), decodeOggOpus(ogg).pcm);
        const viaNative = (setOpusBackend(native), new OggOpusDecoder());
        const pcm = [...viaNative.push(ogg), ...viaNative.flush()];
        expect(pcm.reduce((n, p) => n + p.length, 0)).toBe(input.length);
        expect(viaWasm.length).toBe(input.length);
      });
    }
  },
);

it('the native backend is chosen by voicewire/node when installed (VOICEWIRE_OPUS=wasm forces wasm)', async () => {
  const { registerNativeOpus } = await import('../../src/node/opus-native.js');
  registerNativeOpus();
  const e = new OpusEncoder();
  expect(e.backend).toBe(native === undefined ? 'wasm' : 'native');
  e.destroy();
  process.env['VOICEWIRE_OPUS'] = 'wasm';
  try {
    registerNativeOpus();
    const w = new OpusEncoder();
    expect(w.backend).toBe('wasm');
    w.destroy();
  } finally {
    delete process.env['VOICEWIRE_OPUS'];
  }
});

it.skipIf(native === undefined)(
  native === undefined
    ? 'native backend unaffected by @evan/opus replacing its addon classes [SKIPPED: @evan/opus not installed]'
    : 'the native backend still encodes and decodes when @evan/opus/node/index.js has replaced the shared addon classes (as loading @evan/opus does), bit-identical to the raw addon',
  async () => {
    const { createRequire } = await import('node:module');
    const { nativeOpusBackendOf } = await import('../../src/node/opus-native.js');
    type Addon = Parameters<typeof nativeOpusBackendOf>[0];
    const addon = createRequire(import.meta.url)(`@evan/opus/node/${process.arch}-${process.platform}.node`) as Addon;
    // What @evan/opus/node/index.js does to the addon object: subclasses returning a copy, not the length.
    const eb = addon.buffers.encoder();
    const db = addon.buffers.decoder();
    const Enc = addon.Encoder as unknown as new (o: object) => { encode(b: ArrayBufferView): number };
    const Dec = addon.Decoder as unknown as new (o: object) => { decode(b: ArrayBufferView): number };
    const patched = {
      ...addon,
      Encoder: class extends Enc { override encode(b: ArrayBufferView): number { return eb.slice(0, super.encode(b)) as unknown as number; } },
      Decoder: class extends Dec { override decode(b: ArrayBufferView): number { return db.slice(0, super.decode(b)) as unknown as number; } },
    } as unknown as Addon;
    const run = (backend: OpusBackend): { packet: string; pcm: string } => {
      setOpusBackend(backend);
      const e = new OpusEncoder();
      const d = new OpusDecoder();
      const packet = e.encode(frame);
      const pcm = d.decode(packet);
      e.destroy();
      d.destroy();
      return { packet: b64(packet), pcm: b64(pcm) };
    };
    setOpusLimits({ poolHighWaterMark: 0 }); // no pooled instance of the other backend object (same name, same pool key)
    const want = run(nativeOpusBackendOf(addon));
    expect(Buffer.from(want.packet, 'base64').length).toBeGreaterThan(10);
    expect(Buffer.from(want.pcm, 'base64').length).toBe(1920);
    expect(run(nativeOpusBackendOf(patched))).toEqual(want);
  },
);
