/**
 * Opus and Ogg. First the two backends side by side (issue 12 §2): voicewire's Ogg Opus encoder
 * and decoder on the wasm and on the native libopus (@evan/opus), beside @evan/opus's own JS API
 * (the raw native speed, the goal: within 5 %) and opusscript's — interleaved rounds, the median
 * of per-round time ratios with their spread. Then voicewire's wasm wrapper beside opusscript's
 * own JS API (same wasm, one instance), for encode and decode of 20 ms packets (realtime factors, overhead goal < 5 %);
 * per-packet latency (median, p99); the Ogg Opus encoder/decoder (muxing, CRC, pages); Ogg demux
 * speed beside prism-media's OggDemuxer (which checks no CRC and stalls on packets that span
 * pages); and how many live instances each wrapper holds.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { OpusDecoder, OpusEncoder, opusStats, setOpusBackend } from '../src/audio/opus.js';
import { nativeOpusBackend } from '../src/node/opus-native.js';
import { OggOpusDecoder, OggOpusEncoder, encodeOggOpus } from '../src/audio/ogg-opus.js';
import { OggPacketReader } from '../src/audio/ogg.js';
import { runGroup, save, type GroupResult } from './util.js';

const require = createRequire(import.meta.url);
type OpusScriptInstance = { encode(pcm: Buffer, frame: number): Buffer; decode(packet: Buffer): Buffer; delete(): void };
const OpusScript = require('opusscript') as { new (rate: number, channels: number, app: number): OpusScriptInstance; Application: { AUDIO: number } };
const prism = require('prism-media') as { opus: { OggDemuxer: new () => { _transform(c: Buffer, e: string, cb: (err?: Error | null) => void): void; push(x: unknown): boolean; on(ev: string, f: () => void): void } } };

const wav = readFileSync(new URL('../fixtures/speech/en_48k.wav', import.meta.url));
const speech = new Int16Array(wav.buffer.slice(wav.byteOffset + wav.indexOf('data') + 8, wav.byteOffset + wav.length));
/** `seconds` of speech (the 2.3 s fixture repeated). */
function audio(seconds: number): Int16Array {
  const out = new Int16Array(48000 * seconds);
  for (let i = 0; i < out.length; i++) out[i] = speech[i % speech.length]!;
  return out;
}
const ONE_S = audio(1);
const frames = (pcm: Int16Array, size: number): Int16Array[] => Array.from({ length: Math.floor(pcm.length / size) }, (_, i) => pcm.subarray(i * size, (i + 1) * size));
const packets20 = frames(ONE_S, 960); // 50 packets
const buffers20 = packets20.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength));

const groups: GroupResult[] = [];
/** `OPUS_BENCH=backends,demux` runs only those sections (all by default): backends, wrapper, latency, demux, live. */
const only = process.env.OPUS_BENCH?.split(',');
const section = (name: string): boolean => only === undefined || only.includes(name);
const summary: Record<string, unknown> = {};
let sink = 0;
let k = 0;

// --- backends side by side, interleaved ------------------------------------------------------------

interface Spread {
  median: number;
  p10: number;
  p90: number;
}
/**
 * Runs every case once per round (the order rotated each round), `rounds` times, timing process
 * CPU time; returns, per case, the median and 10th–90th percentile of its per-round time ratio to the first case.
 */
function interleaved(label: string, cases: { name: string; fn: () => void }[], rounds = Number(process.env.BENCH_ROUNDS ?? 61)): Record<string, Spread & { medianUs: number }> {
  for (let i = 0; i < 5; i++) for (const c of cases) c.fn();
  const times = cases.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < cases.length; j++) {
      const i = (j + r) % cases.length;
      // Process CPU time (µs resolution): on a shared machine, wall time also counts the rounds
      // this process spent descheduled, which decided many ratios' spread.
      const t0 = process.cpuUsage();
      cases[i]!.fn();
      const u = process.cpuUsage(t0);
      times[i]!.push((u.user + u.system) * 1000);
    }
  }
  const q = (xs: number[], f: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * f))]!;
  console.log(`\n${label} (${rounds} interleaved rounds; time ratio to ${cases[0]!.name}: median [p10–p90])`);
  const out: Record<string, Spread & { medianUs: number }> = {};
  cases.forEach((c, i) => {
    const ratios = times[i]!.map((t, r) => t / times[0]![r]!);
    const s = { median: q(ratios, 0.5), p10: q(ratios, 0.1), p90: q(ratios, 0.9), medianUs: q(times[i]!, 0.5) / 1000 };
    out[c.name] = s;
    console.log(`  ${c.name.padEnd(44)} ${s.medianUs.toFixed(0).padStart(7)} us   ${s.median.toFixed(3)} [${s.p10.toFixed(3)}–${s.p90.toFixed(3)}]`);
  });
  return out;
}

const native = nativeOpusBackend();
if (!section('backends')) {
  // skipped
} else if (native === undefined) {
  console.log('\n@evan/opus is not installed here: the native backend is skipped');
} else {
  type EvanCodec = { encode(b: ArrayBufferView): Uint8Array; decode(b: ArrayBufferView): Uint8Array };
  const evan = require('@evan/opus') as { Encoder: new (o: object) => EvanCodec; Decoder: new (o: object) => EvanCodec };
  const frames80 = Array.from({ length: 12 }, (_, i) => ONE_S.subarray(i * 3840, (i + 1) * 3840)).concat([ONE_S.subarray(46080)]);
  const packets = Array.from({ length: 50 }, (_, i) => ONE_S.subarray(i * 960, (i + 1) * 960));
  const oggEncode = (backend: 'wasm' | typeof native) => {
    setOpusBackend(backend);
    const enc = new OggOpusEncoder();
    setOpusBackend(undefined);
    return () => {
      for (const f of frames80) sink += enc.push(f).length;
    };
  };
  const evanEnc = new evan.Encoder({ channels: 1, sample_rate: 48000, application: 'audio' });
  const osEnc1 = new OpusScript(48000, 1, OpusScript.Application.AUDIO);
  const bufs = packets.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength));
  summary['backendsEncode'] = interleaved('encode 1 s, 48 kHz mono, 20 ms packets (Ogg: 80 ms pushes, a page each)', [
    { name: '@evan/opus Encoder (native, raw JS API)', fn: () => { for (const p of packets) sink += evanEnc.encode(p).length; } },
    { name: 'voicewire OggOpusEncoder, native backend', fn: oggEncode(native) },
    { name: 'voicewire OggOpusEncoder, wasm backend', fn: oggEncode('wasm') },
    { name: 'opusscript (wasm, own JS API)', fn: () => { for (const b of bufs) sink += osEnc1.encode(b, 960).length; } },
  ]);
  // Decode 10 s per stream, so a stream's set-up (a pooled decoder, its reset) weighs as in a real upload.
  const TEN_S = audio(10);
  const ogg = encodeOggOpus(TEN_S);
  // The raw APIs decode the very packets of that file (a fresh encoder's packets differ, and so
  // does their decode time): the comparison is then of the layers around libopus alone.
  const rawPackets: Uint8Array[] = [];
  {
    const r = new OggPacketReader();
    for (const g of r.push(ogg)) for (const p of g.packets) rawPackets.push(p.slice());
    r.flush();
    rawPackets.splice(0, 2); // OpusHead, OpusTags
  }
  const rawBufs = rawPackets.map((p) => Buffer.from(p));
  const evanDec = new evan.Decoder({ channels: 1, sample_rate: 48000 });
  const osDec1 = new OpusScript(48000, 1, OpusScript.Application.AUDIO);
  const oggDecode = (backend: 'wasm' | typeof native) => () => {
    // The libopus decoder is made when OpusHead is read, inside push: keep the choice until then.
    setOpusBackend(backend);
    const d = new OggOpusDecoder();
    for (const c of d.push(ogg)) sink += c.length;
    setOpusBackend(undefined);
    d.flush();
  };
  summary['backendsDecode'] = interleaved('decode 10 s, 48 kHz mono, 20 ms packets (Ogg: the whole 10 s file, CRC, pre-skip, trim)', [
    { name: '@evan/opus Decoder (native, raw JS API)', fn: () => { for (const p of rawPackets) sink += evanDec.decode(p).length; } },
    { name: 'voicewire OggOpusDecoder, native backend', fn: oggDecode(native) },
    { name: 'voicewire OggOpusDecoder, wasm backend', fn: oggDecode('wasm') },
    { name: 'opusscript (wasm, own JS API)', fn: () => { for (const b of rawBufs) sink += osDec1.decode(b).length; } },
  ]);
  setOpusBackend('wasm');
}

if (section('wrapper')) {
// --- encode / decode beside opusscript ------------------------------------------------------------

const vwEnc = new OpusEncoder();
const osEnc = new OpusScript(48000, 1, OpusScript.Application.AUDIO);
groups.push(
  runGroup(
    'encode 20 ms packet (48 kHz mono, libopus defaults)',
    [
      { name: 'voicewire OpusEncoder', fn: () => void (sink += vwEnc.encode(packets20[k++ % 50]!).length) },
      { name: 'opusscript (own JS API)', fn: () => void (sink += osEnc.encode(buffers20[k++ % 50]!, 960).length) },
    ],
    0.02,
  ),
);
groups.push(
  runGroup(
    'encode 1 s (50 packets of 20 ms)',
    [
      { name: 'voicewire OpusEncoder', fn: () => { for (const p of packets20) sink += vwEnc.encode(p).length; } },
      { name: 'opusscript (own JS API)', fn: () => { for (const b of buffers20) sink += osEnc.encode(b, 960).length; } },
      {
        name: 'voicewire OggOpusEncoder (80 ms pushes)',
        fn: (() => {
          const enc = new OggOpusEncoder();
          const pushes = frames(ONE_S, 3840).concat([ONE_S.subarray(46080)]);
          return () => { for (const f of pushes) sink += enc.push(f).length; };
        })(),
      },
    ],
    1,
  ),
);

const encodedPackets = (() => {
  const e = new OpusEncoder();
  const out = packets20.map((p) => e.encode(p));
  e.destroy();
  return out;
})();
const encodedBuffers = encodedPackets.map((p) => Buffer.from(p));
const vwDec = new OpusDecoder();
const osDec = new OpusScript(48000, 1, OpusScript.Application.AUDIO);
const pcmOut = new Int16Array(960);
groups.push(
  runGroup(
    'decode 1 s (50 packets of 20 ms)',
    [
      { name: 'voicewire OpusDecoder.decode', fn: () => { for (const p of encodedPackets) sink += vwDec.decode(p).length; } },
      { name: 'opusscript (own JS API)', fn: () => { for (const b of encodedBuffers) sink += osDec.decode(b).length; } },
      { name: 'voicewire OpusDecoder.decodeInto', fn: () => { for (const p of encodedPackets) sink += vwDec.decodeInto(p, pcmOut, 0); } },
    ],
    1,
  ),
);
const ogg1s = encodeOggOpus(ONE_S);
groups.push(
  runGroup(
    'decode 1 s of Ogg Opus (CRC, demux, pre-skip, trim)',
    [
      {
        name: 'voicewire OggOpusDecoder',
        fn: () => {
          const d = new OggOpusDecoder();
          for (const c of d.push(ogg1s)) sink += c.length;
          d.flush();
        },
      },
    ],
    1,
  ),
);

// --- overhead, interleaved ------------------------------------------------------------------------
// benchmark.js runs one case after the other, so a busy machine skews the ratio. Here the two
// wrappers alternate in rounds of 1 s of audio; the median of the per-round ratios is the overhead.
function overhead(label: string, ours: () => void, theirs: () => void, rounds = 41): number {
  for (let i = 0; i < 3; i++) {
    ours();
    theirs();
  }
  const ratios: number[] = [];
  const time = (f: () => void): number => {
    const t0 = process.cpuUsage(); // CPU time: see interleaved()
    f();
    const u = process.cpuUsage(t0);
    return u.user + u.system;
  };
  for (let r = 0; r < rounds; r++) {
    // Alternate which runs first, so neither always pays for the other's garbage.
    const a = r % 2 ? time(ours) : 0;
    const b = time(theirs);
    const c = r % 2 ? 0 : time(ours);
    ratios.push((a + c) / b);
  }
  ratios.sort((a, b) => a - b);
  const m = ratios[ratios.length >> 1]!;
  console.log(`  ${label.padEnd(48)} voicewire/opusscript time ratio ${m.toFixed(3)} (${((m - 1) * 100).toFixed(1)} % overhead)`);
  return m;
}
console.log('\noverhead beside opusscript (interleaved rounds of 1 s)');
summary['overhead'] = {
  encode: overhead('encode 50 × 20 ms', () => { for (const p of packets20) sink += vwEnc.encode(p).length; }, () => { for (const b of buffers20) sink += osEnc.encode(b, 960).length; }),
  // A long-lived wasm encoder's speed swings up to 3x with its history (the same input, the same
  // settings; cause not established, float denormals in libopus' state are one candidate, as
  // wasm cannot flush them to zero). Fresh encoders, on the same 1 s each round, compare the
  // wrappers alone.
  encodeFresh: overhead(
    'encode 50 × 20 ms, fresh encoders each round',
    () => {
      const e = new OpusEncoder();
      for (const p of packets20) sink += e.encode(p).length;
      e.destroy();
    },
    () => {
      const e = new OpusScript(48000, 1, OpusScript.Application.AUDIO);
      for (const b of buffers20) sink += e.encode(b, 960).length;
      e.delete();
    },
  ),
  decode: overhead('decode 50 × 20 ms', () => { for (const p of encodedPackets) sink += vwDec.decode(p).length; }, () => { for (const b of encodedBuffers) sink += osDec.decode(b).length; }),
};

// --- per-packet latency ----------------------------------------------------------------------------

function percentiles(label: string, run: (i: number) => void, n = 3000): { medianUs: number; p99Us: number } {
  for (let i = 0; i < 300; i++) run(i);
  const t = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    run(i);
    t[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  t.sort();
  const r = { medianUs: t[n >> 1]!, p99Us: t[Math.floor(n * 0.99)]! };
  console.log(`  ${label.padEnd(48)} median ${r.medianUs.toFixed(1).padStart(7)} us   p99 ${r.p99Us.toFixed(1).padStart(7)} us`);
  return r;
}
console.log('\nper-call latency');
const oggEnc = new OggOpusEncoder();
const frames80 = frames(ONE_S, 3840);
summary['latency'] = {
  encode20_voicewire: percentiles('encode 20 ms, voicewire', (i) => void vwEnc.encode(packets20[i % 50]!)),
  encode20_opusscript: percentiles('encode 20 ms, opusscript', (i) => void osEnc.encode(buffers20[i % 50]!, 960)),
  decode20_voicewire: percentiles('decode 20 ms, voicewire', (i) => void vwDec.decode(encodedPackets[i % 50]!)),
  decode20_opusscript: percentiles('decode 20 ms, opusscript', (i) => void osDec.decode(encodedBuffers[i % 50]!)),
  oggPush80_voicewire: percentiles('OggOpusEncoder.push 80 ms frame (= 1 page)', (i) => void oggEnc.push(frames80[i % 12]!), 1000),
};
}

if (section('demux')) {
// --- Ogg demux beside prism-media ------------------------------------------------------------------

const ogg60s = encodeOggOpus(audio(60));
function prismPackets(data: Buffer, chunk: number): number {
  const d = new prism.opus.OggDemuxer();
  let n = 0;
  d.push = () => {
    n++;
    return true;
  };
  d.on('head', () => undefined);
  d.on('tags', () => undefined);
  for (let at = 0; at < data.length; at += chunk) d._transform(data.subarray(at, at + chunk), 'buffer', (err) => { if (err) throw err; });
  return n;
}
function ourPackets(data: Uint8Array, chunk: number): number {
  const r = new OggPacketReader();
  let n = 0;
  for (let at = 0; at < data.length; at += chunk) for (const g of r.push(data.subarray(at, at + chunk))) n += g.packets.length;
  r.flush();
  return n;
}
const ogg60Buf = Buffer.from(ogg60s);
const demux: Record<string, unknown> = {};
for (const chunk of [ogg60s.length, 4096]) {
  const how = chunk === ogg60s.length ? 'one chunk' : '4 KB chunks';
  demux[how] = interleaved(`Ogg demux, 60 s Ogg Opus (${(ogg60s.length / 1024).toFixed(0)} KB) in ${how}`, [
    // Five files a round: one (0.7 ms) is shorter than the GC pauses that would decide its ratio.
    { name: 'prism-media OggDemuxer (no CRC), 5 files', fn: () => { for (let i = 0; i < 5; i++) sink += prismPackets(ogg60Buf, chunk); } },
    { name: 'voicewire OggPacketReader (CRC checked), 5 files', fn: () => { for (let i = 0; i < 5; i++) sink += ourPackets(ogg60s, chunk); } },
  ], Number(process.env.BENCH_ROUNDS ?? 201));
}
summary['demux'] = demux;
const span = readFileSync(new URL('../fixtures/opus/opusenc_tags2pages.opus', import.meta.url));
const spanOurs = ourPackets(new Uint8Array(span), span.length);
const spanPrism = prismPackets(span, span.length);
console.log(`\nOpusTags spanning two pages (fixtures/opus/opusenc_tags2pages.opus): voicewire reads ${spanOurs} packets, prism-media OggDemuxer ${spanPrism} (it stalls on the continued packet)`);
summary['spanningPackets'] = { voicewire: spanOurs, prismMedia: spanPrism };
}

if (section('live')) {
// --- live instances --------------------------------------------------------------------------------

const frame = packets20[10]!;
{
  const encs: OpusEncoder[] = [];
  const decs: OpusDecoder[] = [];
  const target = Number(process.env.OPUS_LIVE ?? 2000);
  for (let i = 0; i < target; i++) {
    const e = new OpusEncoder();
    const d = new OpusDecoder();
    d.decode(e.encode(frame));
    encs.push(e);
    decs.push(d);
  }
  let ok = 0;
  for (let i = 0; i < target; i++) {
    decs[i]!.decode(encs[i]!.encode(frame));
    ok++;
  }
  const s = opusStats();
  console.log(`\nlive instances: voicewire ${ok} encoders + ${ok} decoders all working (${s.handlers} native handlers, wasm heap ${(s.heapBytes / 2 ** 20).toFixed(0)} MB)`);
  for (const x of [...encs, ...decs]) x.destroy();
  summary['liveVoicewire'] = { encoders: ok, decoders: ok, handlers: s.handlers, heapMB: s.heapBytes / 2 ** 20 };
}
{
  // opusscript's wrapper: every instance shares one heap; count until one of them breaks.
  const all: OpusScriptInstance[] = [];
  const buf = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  let failure = '';
  for (let i = 0; i < 2000 && !failure; i++) {
    try {
      all.push(new OpusScript(48000, 1, OpusScript.Application.AUDIO));
      for (const o of [all[0]!, all.at(-1)!]) o.decode(o.encode(buf, 960));
    } catch (err) {
      failure = `instance ${all.length}: ${(err as Error).message}`;
    }
  }
  const working = failure ? all.length - 1 : all.length;
  console.log(`live instances: opusscript ${working} before failing (${failure || 'no failure up to 2000'})`);
  summary['liveOpusscript'] = { working, failure };
}

}
console.log(`\n(sink ${sink})`);
save('opus', { groups, ...summary });
