// Exact 80 ms frames from arbitrary chunks: `npx tsx examples/framer.ts`.
import { createFramer, STT_FRAME } from 'voicewire';

const framer = createFramer(STT_FRAME);                 // 1920 samples @ 24 kHz = 3840 bytes
const upload = new Uint8Array(10_000);                  // 2.6 frames of audio in odd-sized chunks
const frames: Uint8Array[] = [];
for (let i = 0; i < upload.length; i += 999) frames.push(...framer.push(upload.subarray(i, i + 999)));
frames.push(...framer.flush());                         // last frame zero-padded ('short' | 'drop' by option)
console.log(`${frames.length} frames of ${frames.map((f) => f.length).join(', ')} bytes`);
