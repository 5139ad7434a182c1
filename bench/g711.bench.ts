/**
 * G.711 encode/decode throughput, voicewire beside `alawmulaw` (npm) in the same run, on an 80 ms
 * frame at 8 kHz (640 samples) and on 60 s of audio (480,000 samples). Input: the English speech
 * fixture, tiled. Goal (issue 2): at least 5x alawmulaw's throughput.
 */
import { readFileSync } from 'node:fs';
import * as alawmulawNs from 'alawmulaw';
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from '../src/g711.js';
import { runGroup, save, type GroupResult } from './util.js';

// alawmulaw's `main` is a UMD bundle: under Node its namespace arrives as `default`.
const alawmulaw = ((alawmulawNs as unknown as { default?: typeof alawmulawNs }).default ?? alawmulawNs) as typeof alawmulawNs;

/** The s16le samples of a canonical WAV's data chunk (enough for a fixture; not a WAV parser). */
function speechSamples(): Int16Array {
  const bytes = readFileSync(new URL('../fixtures/speech/en.wav', import.meta.url));
  const at = bytes.indexOf('data', 12, 'latin1');
  const size = bytes.readUInt32LE(at + 4);
  const pcm = new Int16Array(size >> 1);
  for (let i = 0; i < pcm.length; i++) pcm[i] = bytes.readInt16LE(at + 8 + 2 * i);
  return pcm;
}

function tiled(source: Int16Array, n: number): Int16Array {
  const out = new Int16Array(n);
  for (let i = 0; i < n; i += source.length) out.set(source.subarray(0, Math.min(source.length, n - i)), i);
  return out;
}

const speech = speechSamples();
const sizes = [
  { label: '80 ms (640 samples)', samples: 640, seconds: 0.08 },
  { label: '60 s (480000 samples)', samples: 480_000, seconds: 60 },
];

const groups: GroupResult[] = [];
const ratios: string[] = [];
let sink = 0; // keeps results alive so the JIT cannot drop the work

for (const { label, samples, seconds } of sizes) {
  const pcm = tiled(speech, samples);
  const codesOut = new Uint8Array(samples);
  const pcmOut = new Int16Array(samples);
  const mu = encodeMulaw(pcm);
  const a = encodeAlaw(pcm);
  const cases = [
    { group: `mu-law encode, ${label}`, ours: () => (sink ^= encodeMulaw(pcm, codesOut)[0]!), ours2: () => (sink ^= encodeMulaw(pcm)[0]!), peer: () => (sink ^= alawmulaw.mulaw.encode(pcm)[0]!) },
    { group: `mu-law decode, ${label}`, ours: () => (sink ^= decodeMulaw(mu, pcmOut)[0]!), ours2: () => (sink ^= decodeMulaw(mu)[0]!), peer: () => (sink ^= alawmulaw.mulaw.decode(mu)[0]!) },
    { group: `A-law encode, ${label}`, ours: () => (sink ^= encodeAlaw(pcm, codesOut)[0]!), ours2: () => (sink ^= encodeAlaw(pcm)[0]!), peer: () => (sink ^= alawmulaw.alaw.encode(pcm)[0]!) },
    { group: `A-law decode, ${label}`, ours: () => (sink ^= decodeAlaw(a, pcmOut)[0]!), ours2: () => (sink ^= decodeAlaw(a)[0]!), peer: () => (sink ^= alawmulaw.alaw.decode(a)[0]!) },
  ];
  for (const c of cases) {
    const g = runGroup(
      c.group,
      [
        { name: 'voicewire (preallocated out)', fn: c.ours },
        { name: 'voicewire (new output)', fn: c.ours2 },
        { name: 'alawmulaw', fn: c.peer },
      ],
      seconds,
    );
    groups.push(g);
    const [ours, ours2, peer] = g.results;
    const msps = (hz: number): string => ((hz * samples) / 1e6).toFixed(0);
    ratios.push(
      `${c.group.padEnd(38)} voicewire ${msps(ours!.hz).padStart(5)} M samples/s (${(ours!.hz / peer!.hz).toFixed(1)}x alawmulaw; ${(ours2!.hz / peer!.hz).toFixed(1)}x with a new output), alawmulaw ${msps(peer!.hz)} M samples/s`,
    );
  }
}

console.log('\nSummary (goal: >= 5x alawmulaw)');
for (const r of ratios) console.log(`  ${r}`);
if (sink === 0.5) console.log(sink);
save('g711', groups);
