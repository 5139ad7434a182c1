// WAV in any chunking, G.711 and the API's format names: `npx tsx examples/wav-g711.ts`.
import { readFile } from 'node:fs/promises';
import { decodeWav, createWavDecoder, encodeWav, wavStreamHeader, float32ToInt16,
         encodeMulaw, decodeMulaw, parseAudioFormat } from 'voicewire';

const bytes = new Uint8Array(await readFile('fixtures/speech/en_48k.wav'));
const { format, samples } = decodeWav(bytes, { output: 'int16', mono: true }); // any WAV ffmpeg/sox write
console.log(`${format.sampleRate} Hz, ${samples.length} samples`);

const dec = createWavDecoder({ output: 'int16', mono: true });  // a live upload, any chunking
let streamed = 0;
for (let i = 0; i < bytes.length; i += 1000) {
  for (const ev of dec.push(bytes.subarray(i, i + 1000))) {
    if (ev.type === 'samples') streamed += ev.samples.length;
  }
}
for (const ev of dec.flush()) if (ev.type === 'samples') streamed += ev.samples.length; // WAV_SIZE_MISMATCH if cut short
console.log(`streamed: ${streamed} samples`);

const header = wavStreamHeader({ sampleRate: 48000 });         // sizes 0xFFFFFFFF, then raw PCM
const f32 = Float32Array.from({ length: 24000 }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / 24000));
const file = encodeWav(float32ToInt16(f32), { sampleRate: 24000 }); // exact sizes
console.log(`stream header ${header.length} bytes, file ${file.length} bytes`);

const codes = encodeMulaw(samples, new Uint8Array(samples.length)); // bit-exact with ITU-T G.191
console.log(`μ-law: ${codes.length} bytes, first sample ${samples[0]} → ${decodeMulaw(codes)[0]}`);
console.log(parseAudioFormat('mulaw_8000').canonical);                   // ulaw_8000
console.log(parseAudioFormat('pcm', { direction: 'stt-input' }).sampleRate); // 24000 (as TTS output: 48000)
