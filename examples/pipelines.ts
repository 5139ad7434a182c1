// The TTS and STT audio pipelines and the TTS `audio` message: `npx tsx examples/pipelines.ts`.
import { createTtsAudioEncoder, createSttAudioDecoder, serializeTtsAudioMessage, bytesOf, encodeBase64 } from 'voicewire';

const modelFrames = Array.from({ length: 5 }, () => new Int16Array(3840)); // 48 kHz s16 mono, 80 ms each
const tts = createTtsAudioEncoder('ulaw_8000');          // any of the 12 API formats
const lines: string[] = [];
for (const frame of modelFrames) {
  const { bytes, start_s, stop_s } = tts.encode(frame);  // one chunk per frame, output timeline
  lines.push(serializeTtsAudioMessage(bytes, { start_s, stop_s }));
}
const tail = tts.end();                                  // the resampler's tail (Opus: the EOS page)
lines.push(serializeTtsAudioMessage(tail.bytes, { start_s: tail.start_s, stop_s: tail.stop_s }));
console.log(`${lines.length} audio messages, last stop_s ${tail.stop_s}`);
console.log(tts.mapWord({ text: 'hi', start_s: 0.16, stop_s: 0.24 })); // + the chunk that completes the word

const stt = createSttAudioDecoder('pcm_16000');          // pcm, pcm_N, wav, opus, ulaw_8000, alaw_8000
const audio = encodeBase64(bytesOf(new Int16Array(1280))); // 80 ms at 16 kHz
let frames = 0;
for (let i = 0; i < 3; i++) frames += stt.pushMessage(JSON.stringify({ type: 'audio', audio })).length;
frames += stt.flush().length;                         // end of stream: the last frame, zero-padded
console.log(`STT: ${frames} frames of 1920 samples at 24 kHz`);
