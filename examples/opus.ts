// Ogg Opus out and back: `npx tsx examples/opus.ts`.
import { OggOpusEncoder, OggOpusDecoder } from 'voicewire';

const pcm = Int16Array.from({ length: 48000 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 48000)));
const enc = new OggOpusEncoder({ bitrate: 32000 });    // 48 kHz mono, 20 ms packets, a page per 80 ms
const pages: Uint8Array[] = [];
for (let i = 0; i < pcm.length; i += 3840) pages.push(...enc.push(pcm.subarray(i, i + 3840))); // header pages first
pages.push(...enc.flush());                             // EOS page: granule = input length + pre-skip
console.log(`${pages.length} pages, ${pages.reduce((n, p) => n + p.length, 0)} bytes`);

const dec = new OggOpusDecoder({ sampleRate: 24000 });
let decoded = 0;
for (const page of pages) for (const out of dec.push(page)) decoded += out.length;
for (const out of dec.flush()) decoded += out.length;
console.log(`decoded ${decoded} samples at 24 kHz`);    // pre-skip and end trimming: exactly 1 s
enc.destroy();
dec.destroy();
