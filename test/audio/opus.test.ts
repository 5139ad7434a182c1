import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { OPUS_LIBRARY_VERSION, OpusDecoder, OpusEncoder, opusPacketDuration, opusStats } from '../../src/audio/opus.js';
import { VoicewireError } from '../../src/util/errors.js';
import { has, needs, run } from '../helpers/tools.js';
import { fileURLToPath } from 'node:url';
import { expectCode as expectError } from '../helpers/errors.js';

const require = createRequire(import.meta.url);
/** opusscript's own JavaScript API: a reference for single-instance encoding and decoding. */
const OpusScript = require('opusscript') as {
  new (rate: number, channels: number, application: number): { encode(pcm: Buffer, frame: number): Buffer; decode(packet: Buffer): Buffer; delete(): void };
  Application: { VOIP: number; AUDIO: number; RESTRICTED_LOWDELAY: number };
};

const speech = (() => {
  const wav = readFileSync(new URL('../../fixtures/speech/en_48k.wav', import.meta.url));
  const at = wav.indexOf('data') + 8;
  return new Int16Array(wav.buffer.slice(wav.byteOffset + at, wav.byteOffset + wav.length));
})();


const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
const le = (pcm: Int16Array): Buffer => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);

/** Pre-skip in the OpusHead of a file written by another encoder (RFC 7845 §5.1, bytes 10–11 of the first packet). */
function preSkipOf(ogg: Uint8Array): number {
  const at = Buffer.from(ogg).indexOf('OpusHead');
  return ogg[at + 10]! | (ogg[at + 11]! << 8);
}

describe('OpusEncoder / OpusDecoder (libopus wasm from opusscript)', () => {
  it('OPUS_LIBRARY_VERSION says libopus 1.4, and the build answers the ctl requests as 1.4 does (not 1.3, not 1.5)', () => {
    // The wasm exports no opus_get_version_string: probe requests whose answer changed between
    // versions, on a fresh instance of the raw module (request codes and results: opus_defines.h).
    const create = require('opusscript/build/opusscript_native_wasm.js') as (arg: object) => {
      OpusScriptHandler: { new (rate: number, channels: number, application: number): { _encoder_ctl(req: number, arg: number): number; _decoder_ctl(req: number, arg: number): number }; destroy_handler(h: unknown): void };
    };
    const OPUS_OK = 0;
    const OPUS_BAD_ARG = -1;
    const OPUS_UNIMPLEMENTED = -5;
    const mod = create({});
    const h = new mod.OpusScriptHandler(48000, 1, 2049 /* OPUS_APPLICATION_AUDIO */);
    // OPUS_SET_INBAND_FEC_REQUEST (4012): 1.4 added mode 2 (FEC without forcing SILK); 1.3 accepts only 0 and 1.
    expect(h._encoder_ctl(4012, 2)).toBe(OPUS_OK);
    expect(h._encoder_ctl(4012, 3)).toBe(OPUS_BAD_ARG);
    // 1.5 added OPUS_SET_DRED_DURATION_REQUEST (4050) and OPUS_SET_COMPLEXITY_REQUEST (4010) on the decoder.
    expect(h._encoder_ctl(4050, 100)).toBe(OPUS_UNIMPLEMENTED);
    expect(h._decoder_ctl(4010, 5)).toBe(OPUS_UNIMPLEMENTED);
    expect(h._encoder_ctl(4010, 5)).toBe(OPUS_OK); // the same request is known to the encoder
    mod.OpusScriptHandler.destroy_handler(h);
    expect(OPUS_LIBRARY_VERSION).toMatch(/^libopus 1\.4 \(opusscript 0\.1\.1 wasm\)$/);
    const pkg = require('opusscript/package.json') as { version: string; description: string };
    expect(pkg.version).toBe('0.1.1');
    expect(pkg.description).toMatch(/libopus 1\.4\b/);
  });

  it('reports the look-ahead libopus uses for pre-skip: the same as opusenc and ffmpeg write', () => {
    const opusencFile = new Uint8Array(readFileSync(new URL('../../fixtures/opus/opusenc_20ms.opus', import.meta.url)));
    for (const application of ['audio', 'voip'] as const) {
      const e = new OpusEncoder({ application });
      expect(e.lookahead).toBe(preSkipOf(opusencFile));
      e.destroy();
    }
    expect(preSkipOf(opusencFile)).toBe(312);
  });

  it.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'lowdelay look-ahead equals the pre-skip ffmpeg/libopus writes for -application lowdelay'), () => {
    const raw = run('ffmpeg', ['-v', 'error', '-f', 's16le', '-ar', '48000', '-ac', '1', '-i', 'pipe:0', '-c:a', 'libopus', '-application', 'lowdelay', '-f', 'ogg', 'pipe:1'], le(speech.subarray(0, 9600)));
    const e = new OpusEncoder({ application: 'lowdelay' });
    expect(e.lookahead).toBe(preSkipOf(raw));
    expect(e.lookahead).toBe(120); // 2.5 ms
    e.destroy();
  });

  it('encodes exactly like opusscript, even from a pooled encoder whose previous user changed its settings', () => {
    const frames = [0, 1, 2, 3, 4, 5].map((i) => speech.subarray(12000 + i * 960, 12000 + (i + 1) * 960));
    const ref = new OpusScript(48000, 1, OpusScript.Application.AUDIO);
    const want = frames.map((f) => b64(ref.encode(le(f), 960)));
    ref.delete();
    // Dirty a handler: other settings, other audio; then give it back to the pool.
    const dirty = new OpusEncoder({ bitrate: 12000, complexity: 1 });
    for (let i = 0; i < 10; i++) dirty.encode(speech.subarray(i * 960, (i + 1) * 960));
    dirty.destroy();
    const e = new OpusEncoder();
    expect(frames.map((f) => b64(e.encode(f)))).toEqual(want);
    e.destroy();
  });

  it('decodes exactly like opusscript for packets up to 60 ms, and decodes 120 ms packets whole', () => {
    const e = new OpusEncoder();
    const d = new OpusDecoder();
    const ref = new OpusScript(48000, 1, OpusScript.Application.AUDIO);
    for (let i = 0; i < 5; i++) {
      const p = e.encode(speech.subarray(20000 + i * 960, 20000 + (i + 1) * 960));
      const mine = d.decode(p);
      expect(b64(new Uint8Array(mine.buffer))).toBe(b64(ref.decode(Buffer.from(p))));
    }
    ref.delete();
    // 120 ms: 5760 samples, and they carry the signal (not zeros, not a truncated copy).
    const e2 = new OpusEncoder({ bitrate: 64000 });
    const d2 = new OpusDecoder();
    const input = speech.subarray(24000, 24000 + 5760 * 3);
    const out: Int16Array[] = [];
    for (let i = 0; i < 3; i++) {
      const p = e2.encode(input.subarray(i * 5760, (i + 1) * 5760));
      expect(opusPacketDuration(p)).toBe(5760);
      out.push(d2.decode(p));
    }
    expect(out.map((o) => o.length)).toEqual([5760, 5760, 5760]);
    // Against the input delayed by the look-ahead, over the 2nd and 3rd packets.
    let s = 0;
    let n = 0;
    for (let i = 5760; i < 3 * 5760; i++) {
      const x = input[i - e2.lookahead]!;
      const y = out[Math.floor(i / 5760)]![i % 5760]!;
      s += x * x;
      n += (x - y) * (x - y);
    }
    expect(10 * Math.log10(s / n)).toBeGreaterThan(10);
    e.destroy();
    d.destroy();
    e2.destroy();
    d2.destroy();
  });

  it('encodes every frame size from 2.5 to 120 ms, and Float32 input exactly like the same Int16 input', () => {
    const e = new OpusEncoder();
    const d = new OpusDecoder();
    for (const ms of [2.5, 5, 10, 20, 40, 60, 80, 100, 120]) {
      const n = 48 * ms;
      const p = e.encode(speech.subarray(30000, 30000 + n));
      expect(opusPacketDuration(p)).toBe(n);
      expect(d.decode(p).length).toBe(n);
    }
    const a = new OpusEncoder();
    const b = new OpusEncoder();
    for (let i = 0; i < 4; i++) {
      const i16 = speech.subarray(40000 + i * 960, 40000 + (i + 1) * 960);
      const f32 = Float32Array.from(i16, (v) => v / 32767);
      expect(b64(b.encode(f32))).toBe(b64(a.encode(i16)));
    }
    expectError(() => e.encode(new Int16Array(961)), 'INVALID_ARGUMENT', /not an Opus frame/);
    expectError(() => e.encode(new Int16Array(48 * 140)), 'INVALID_ARGUMENT');
    expectError(() => e.encode([1, 2] as never), 'INVALID_ARGUMENT');
    for (const x of [e, d, a, b]) x.destroy();
  });

  it('applies bitrate, complexity and application options', () => {
    const low = new OpusEncoder({ bitrate: 16000, complexity: 3 });
    const high = new OpusEncoder({ bitrate: 128000 });
    expect(low.getBitrate()).toBe(16000);
    expect(low.getComplexity()).toBe(3);
    let lowBytes = 0;
    let highBytes = 0;
    for (let i = 0; i < 20; i++) {
      const f = speech.subarray(i * 960, (i + 1) * 960);
      lowBytes += low.encode(f).length;
      highBytes += high.encode(f).length;
    }
    expect(lowBytes * 8 / 0.4).toBeLessThan(24000);
    expect(highBytes * 8 / 0.4).toBeGreaterThan(80000);
    const max = new OpusEncoder({ bitrate: 'max', application: 'voip' });
    expect(max.application).toBe('voip');
    expectError(() => new OpusEncoder({ bitrate: 100 }), 'INVALID_ARGUMENT', /bitrate/);
    expectError(() => new OpusEncoder({ complexity: 11 }), 'INVALID_ARGUMENT', /complexity/);
    expectError(() => new OpusEncoder({ application: 'music' as never }), 'INVALID_ARGUMENT', /application/);
    expectError(() => new OpusEncoder({ sampleRate: 44100 as never }), 'INVALID_ARGUMENT', /sampleRate/);
    expectError(() => new OpusDecoder({ channels: 3 as never }), 'INVALID_ARGUMENT', /channels/);
    for (const x of [low, high, max]) x.destroy();
  });

  it('applies the output gain in Q7.8 dB (RFC 7845 §5.1): +6 dB scales by 10^(6/20)', () => {
    const e = new OpusEncoder();
    const packets = [0, 1, 2, 3, 4].map((i) => e.encode(speech.subarray(50000 + i * 960, 50000 + (i + 1) * 960)));
    const plain = new OpusDecoder();
    const loud = new OpusDecoder({ gain: 6 * 256 });
    expect(loud.getGain()).toBe(1536);
    let a = 0;
    let b = 0;
    for (const p of packets) {
      const x = plain.decodeFloat(p);
      const y = loud.decodeFloat(p);
      for (let i = 0; i < x.length; i++) {
        a += x[i]! * y[i]!;
        b += x[i]! * x[i]!;
      }
    }
    expect(a / b).toBeCloseTo(10 ** (6 / 20), 2);
    expectError(() => loud.setGain(40000), 'INVALID_ARGUMENT');
    for (const x of [e, plain, loud]) x.destroy();
  });

  it('rejects malformed packets with OPUS_INVALID_PACKET and keeps decoding afterwards', () => {
    const e = new OpusEncoder();
    const d = new OpusDecoder();
    const good = e.encode(speech.subarray(0, 960));
    expectError(() => d.decode(new Uint8Array(0)), 'OPUS_INVALID_PACKET', /at least one byte/);
    expectError(() => d.decode(Uint8Array.of(0x03)), 'OPUS_INVALID_PACKET', /frame count/);
    expectError(() => d.decode(Uint8Array.of(0x03, 0x00)), 'OPUS_INVALID_PACKET', /0 frames/);
    expectError(() => d.decode(Uint8Array.of(0x0b, 49)), 'OPUS_INVALID_PACKET', /more than 120 ms/);
    // A code-1 packet (two equal frames) whose payload cannot split in two: libopus rejects it.
    expectError(() => d.decode(Uint8Array.of((1 << 3) | 1, 1, 2, 3)), 'OPUS_INVALID_PACKET', /opus_decode/);
    expect(d.decode(good).length).toBe(960);
    expectError(() => d.decodeInto(good, new Int16Array(100)), 'INVALID_ARGUMENT', /do not fit/);
    e.destroy();
    d.destroy();
    expectError(() => d.decode(good), 'INVALID_STATE');
    expectError(() => e.encode(speech.subarray(0, 960)), 'INVALID_STATE');
    d.destroy(); // idempotent
  });

  it('opusPacketDuration follows RFC 6716 Table 2 and §3.2 frame counts', () => {
    // Table 2: configs 0–11 SILK (10/20/40/60 ms), 12–15 Hybrid (10/20), 16–31 CELT (2.5/5/10/20).
    const table: [number, number, number][] = [
      [0, 3, 10], [4, 7, 10], [8, 11, 10], [12, 13, 10], [14, 15, 10], [16, 19, 2.5], [20, 23, 2.5], [24, 27, 2.5], [28, 31, 2.5],
    ];
    const silkMs = [10, 20, 40, 60];
    const hybridMs = [10, 20];
    const celtMs = [2.5, 5, 10, 20];
    for (const [first, last] of table) {
      for (let c = first; c <= last; c++) {
        const ms = c < 12 ? silkMs[c - first]! : c < 16 ? hybridMs[c - first]! : celtMs[c - first]!;
        expect(opusPacketDuration(Uint8Array.of(c << 3))).toBe(ms * 48); // code 0: one frame
        expect(opusPacketDuration(Uint8Array.of((c << 3) | 1))).toBe(ms * 96); // code 1: two frames
        expect(opusPacketDuration(Uint8Array.of((c << 3) | 2))).toBe(ms * 96); // code 2: two frames
        const m = Math.floor(120 / ms);
        expect(opusPacketDuration(Uint8Array.of((c << 3) | 3, m))).toBe(ms * 48 * m); // code 3: M frames
        expect(opusPacketDuration(Uint8Array.of((c << 3) | 3, m), 16000)).toBe((ms * 16 * m));
      }
    }
  });

  it('holds 1000 live encoders AND 1000 live decoders, all working after the heap has grown', () => {
    const before = opusStats();
    const frames = [0, 1].map((i) => speech.subarray(60000 + i * 960, 60000 + (i + 1) * 960));
    const ref = new OpusScript(48000, 1, OpusScript.Application.AUDIO);
    const want = frames.map((f) => ref.encode(le(f), 960));
    const wantPcm = want.map((p) => b64(ref.decode(p)));
    ref.delete();
    const encoders: OpusEncoder[] = [];
    const decoders: OpusDecoder[] = [];
    for (let i = 0; i < 1000; i++) {
      const e = new OpusEncoder();
      const d = new OpusDecoder();
      expect(b64(e.encode(frames[0]!))).toBe(b64(want[0]!));
      expect(b64(new Uint8Array(d.decode(want[0]!).buffer))).toBe(wantPcm[0]);
      encoders.push(e);
      decoders.push(d);
    }
    const live = opusStats();
    expect(live.encoders - before.encoders).toBe(1000);
    expect(live.decoders - before.decoders).toBe(1000);
    expect(live.heapBytes).toBeGreaterThan(64 * 1024 * 1024); // the wasm heap grew several times meanwhile
    // Every instance still works (no detached views) and still holds its own state.
    for (let i = 0; i < 1000; i++) {
      expect(b64(encoders[i]!.encode(frames[1]!))).toBe(b64(want[1]!));
      expect(b64(new Uint8Array(decoders[i]!.decode(want[1]!).buffer))).toBe(wantPcm[1]);
    }
    for (const x of [...encoders, ...decoders]) x.destroy();
    const after = opusStats();
    expect(after.encoders).toBe(before.encoders);
    expect(after.decoders).toBe(before.decoders);
  });

  it('10,000 create/destroy cycles do not grow memory', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const frame = speech.subarray(0, 960);
    const cycle = (i: number): void => {
      const e = new OpusEncoder({ bitrate: 24000 });
      const d = new OpusDecoder();
      if (i % 100 === 0) d.decode(e.encode(frame)); // a first encode after a reset costs ~0.7 ms
      e.destroy();
      d.destroy();
    };
    // Warm up the JIT, the pool and V8's heap sizing (RSS swings by ±20 MB over the first ~2000
    // cycles as V8 resizes its heap, then stays flat).
    for (let i = 0; i < 3000; i++) cycle(i);
    gc();
    const before = opusStats();
    const rss = process.memoryUsage().rss;
    for (let i = 0; i < 10_000; i++) cycle(i);
    gc();
    const after = opusStats();
    expect(after.handlers).toBe(before.handlers);
    expect(after.heapBytes).toBe(before.heapBytes);
    expect(process.memoryUsage().rss - rss).toBeLessThan(4 * 1024 * 1024);
  });

  it('returns instances dropped without destroy() to the pool (FinalizationRegistry)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const before = opusStats();
    (() => {
      for (let i = 0; i < 50; i++) {
        new OpusEncoder().encode(speech.subarray(0, 960));
        new OpusDecoder();
      }
    })();
    expect(opusStats().encoders - before.encoders).toBe(50);
    for (let i = 0; i < 20 && opusStats().encoders + opusStats().decoders > before.encoders + before.decoders; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    const after = opusStats();
    expect(after.encoders).toBe(before.encoders);
    expect(after.decoders).toBe(before.decoders);
    expect(after.finalized - before.finalized).toBe(100);
  });

  it('loads asynchronously from the wasm bytes with initOpus({ wasm }) (the browser path)', async () => {
    vi.resetModules();
    const fresh = await import('../../src/audio/opus.js');
    expect(fresh.opusStats().heapBytes).toBe(0); // a new, unloaded copy of the module
    const wasm = readFileSync(require.resolve('opusscript/build/opusscript_native_wasm.wasm'));
    await fresh.initOpus({ wasm: new Uint8Array(wasm) });
    await fresh.initOpus(); // idempotent
    const e = new fresh.OpusEncoder();
    expect(e.lookahead).toBe(312);
    expect(e.encode(speech.subarray(0, 960)).length).toBeGreaterThan(0);
    e.destroy();
    vi.resetModules();
    const broken = await import('../../src/audio/opus.js');
    await expect(broken.initOpus({ wasm: new Uint8Array(16) })).rejects.toMatchObject({ code: 'INVALID_STATE' });
  });

  it.skipIf(!has('chromium'))(needs('chromium', 'runs in a browser main thread: sync loading is refused with a clear error, initOpus({ wasm }) works'), async () => {
    const { build } = await import('esbuild');
    const { chromium } = await import('playwright-core');
    const src = fileURLToPath(new URL('../../src/audio/', import.meta.url));
    const bundle = await build({
      stdin: { contents: "export * from './opus.js'; export * from './ogg-opus.js';", resolveDir: src, loader: 'ts' },
      bundle: true,
      platform: 'browser',
      format: 'iife',
      globalName: 'VW',
      write: false,
      logLevel: 'silent',
    });
    const wasm = readFileSync(require.resolve('opusscript/build/opusscript_native_wasm.wasm')).toString('base64');
    const browser = await chromium.launch({ executablePath: Buffer.from(run('sh', ['-c', 'command -v chromium'])).toString().trim(), args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.setContent('<html><body></body></html>');
      await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
      const result = await page.evaluate(async (b64: string) => {
        const VW = (globalThis as unknown as { VW: typeof import('../../src/audio/ogg-opus.js') & typeof import('../../src/audio/opus.js') }).VW;
        let sync = '';
        try {
          new VW.OpusEncoder();
        } catch (err) {
          sync = (err as { code: string }).code;
        }
        await VW.initOpus({ wasm: Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)) });
        const pcm = new Int16Array(48000).map((_, i) => Math.sin(i / 9) * 8000);
        return { sync, length: VW.decodeOggOpus(VW.encodeOggOpus(pcm)).pcm.length };
      }, wasm);
      expect(result).toEqual({ sync: 'INVALID_STATE', length: 48000 });
    } finally {
      await browser.close();
    }
  }, 30_000);
});
