/**
 * WAV decoding beside `wavefile` (npm) in the same run, and the PCM conversions on one 80 ms
 * frame at 24 kHz (1920 samples). WAV inputs: the English speech fixture at 24 kHz (s16, the STT
 * input shape) and at 48 kHz (s24), tiled to 80 ms, 1 s and 60 s, mono.
 *
 * wavefile's `new WaveFile(bytes).getSamples(true, Int16Array | Int32Array)` parses the header and
 * unpacks the raw integer samples (no scaling); voicewire's cases do at least that much:
 * `int16` output (s24 → top 16 bits) and `float32` output (scaled to [-1, 1)). A third voicewire
 * case feeds the 60 s file in 80 ms chunks through the incremental decoder (a live upload).
 * Goal (issue 2): faster than wavefile.
 */
import { readFileSync } from 'node:fs';
import * as wavefileNs from 'wavefile';
import { createWavDecoder, decodeWav, encodeWav, type PcmEncoding } from '../src/index.js';
import { float32ToInt16, int16ToFloat32 } from '../src/audio/pcm.js';
import { fmtRatio, runGroup, save, type GroupResult } from './util.js';

// wavefile's `main` is a UMD bundle: under Node its namespace arrives as `default`.
const { WaveFile } = ((wavefileNs as unknown as { default?: typeof wavefileNs }).default ?? wavefileNs) as typeof wavefileNs;

function speech(rate: 24000 | 48000): Int16Array {
  const file = readFileSync(new URL(`../fixtures/speech/en_${rate / 1000}k.wav`, import.meta.url));
  return decodeWav(file, { output: 'int16' }).samples;
}

function tiled(source: Int16Array, n: number): Int16Array {
  const out = new Int16Array(n);
  for (let i = 0; i < n; i += source.length) out.set(source.subarray(0, Math.min(source.length, n - i)), i);
  return out;
}

let sink = 0; // keeps results alive so the JIT cannot drop the work
const groups: GroupResult[] = [];
const ratios: string[] = [];

const inputs: { rate: 24000 | 48000; encoding: PcmEncoding; peerType: Int16ArrayConstructor | Int32ArrayConstructor }[] = [
  { rate: 24000, encoding: 's16le', peerType: Int16Array },
  { rate: 48000, encoding: 's24le', peerType: Int32Array },
];
const sizes = [
  { label: '80 ms', seconds: 0.08 },
  { label: '1 s', seconds: 1 },
  { label: '60 s', seconds: 60 },
];

for (const { rate, encoding, peerType } of inputs) {
  const source = speech(rate);
  for (const { label, seconds } of sizes) {
    const n = Math.round(rate * seconds);
    const wav = encodeWav(tiled(source, n), { sampleRate: rate, encoding });
    // Sanity: both sides decode the same sample count before timing anything.
    if (new WaveFile(wav).getSamples(true, peerType).length !== n || decodeWav(wav).frames !== n) throw new Error('decoders disagree');
    const cases = [
      { name: 'voicewire decodeWav int16', fn: () => void (sink += decodeWav(wav, { output: 'int16' }).samples.length) },
      { name: 'voicewire decodeWav float32', fn: () => void (sink += decodeWav(wav).samples.length) },
      { name: `wavefile getSamples(${peerType.name})`, fn: () => void (sink += new WaveFile(wav).getSamples(true, peerType).length) },
    ];
    if (seconds === 60) {
      const chunkBytes = Math.round(rate * 0.08) * (encoding === 's16le' ? 2 : 3);
      const chunks: Uint8Array[] = [];
      for (let i = 0; i < wav.length; i += chunkBytes) chunks.push(wav.subarray(i, i + chunkBytes));
      cases.splice(2, 0, {
        name: 'voicewire streaming, 80 ms chunks',
        fn: () => {
          const dec = createWavDecoder({ output: 'int16' });
          for (const c of chunks) for (const e of dec.push(c)) if (e.type === 'samples') sink += e.frames;
          dec.flush();
        },
      });
    }
    const g = runGroup(`WAV decode ${encoding} mono ${rate / 1000} kHz, ${label}`, cases, seconds);
    groups.push(g);
    const peer = g.results[g.results.length - 1]!;
    // Per-round ratios against wavefile: (wavefile's time / ours) in the same round.
    const f = g.results[1]!;
    ratios.push(`${g.group}: int16 ${fmtRatio(peer.refSpeedup, peer.refSpeedupP10, peer.refSpeedupP90)}, float32 ${(peer.refSpeedup / f.refSpeedup).toFixed(1)}x wavefile`);
  }
}

// PCM conversions on one 80 ms frame at 24 kHz. The peers are the idioms protocol-notes measures
// as 50-100x slower (`Float32Array.from` with a callback, a Buffer readInt16LE loop).
{
  const i16 = tiled(speech(24000), 1920);
  const f32 = int16ToFloat32(i16);
  const outF = new Float32Array(1920);
  const outI = new Int16Array(1920);
  const buf = Buffer.from(i16.buffer);
  groups.push(
    runGroup('int16 → float32, 1920 samples', [
      { name: 'voicewire int16ToFloat32 (out)', fn: () => void (sink += int16ToFloat32(i16, outF)[7]!) },
      { name: 'voicewire int16ToFloat32 (new)', fn: () => void (sink += int16ToFloat32(i16)[7]!) },
      { name: 'Float32Array.from(i16, fn)', fn: () => void (sink += Float32Array.from(i16, (x) => x / 32768)[7]!) },
      {
        name: 'Buffer readInt16LE loop',
        fn: () => {
          const o = new Float32Array(1920);
          for (let i = 0; i < 1920; i++) o[i] = buf.readInt16LE(i * 2) / 32768;
          sink += o[7]!;
        },
      },
    ], 0.08),
  );
  groups.push(
    runGroup('float32 → int16 (×32767, round, clamp), 1920 samples', [
      { name: 'voicewire float32ToInt16 (out)', fn: () => void (sink += float32ToInt16(f32, outI)[7]!) },
      { name: 'voicewire float32ToInt16 (new)', fn: () => void (sink += float32ToInt16(f32)[7]!) },
      { name: 'Int16Array.from(f32, round+clamp)', fn: () => void (sink += Int16Array.from(f32, (x) => Math.max(-32768, Math.min(32767, Math.round(x * 32767))))[7]!) },
    ], 0.08),
  );
}

console.log('\n' + ratios.join('\n'));
if (sink === 42) console.log('');
save('wav', groups);
