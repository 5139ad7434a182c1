/**
 * Browser bundle entry for test/browser.test.ts: runs the platform-neutral pipelines through
 * their web streams, exactly as a page would, and returns every output as base64. The same
 * function runs in Node, and the test compares the two byte for byte.
 */
import { initOpus } from '../../src/audio/opus.js';
import { decodeBase64, encodeBase64 } from '../../src/util/base64.js';
import { createSttDecoderStream } from '../../src/pipelines/stt-audio-decoder.js';
import { createTtsEncoderStream } from '../../src/pipelines/tts-audio-encoder.js';

/** Inputs, base64: 48 kHz s16le TTS frames, STT files, and (optionally) the libopus wasm. */
export interface PipelineInputs {
  pcm48: string;
  sttWav: string;
  sttOpus: string;
  sttUlaw: string;
  wasm?: string;
}

async function collect(readable: ReadableStream<unknown>): Promise<string> {
  const parts: Uint8Array[] = [];
  for (const reader = readable.getReader(); ; ) {
    const { done, value } = await reader.read();
    if (done) break;
    const v = value as ArrayBufferView;
    parts.push(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
  }
  let total = 0;
  for (const p of parts) total += p.length;
  const all = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return encodeBase64(all);
}

/** A ReadableStream of `chunk`-sized pieces of `data`. */
function source<T extends Int16Array | Uint8Array>(data: T, chunk: number): ReadableStream<T> {
  let at = 0;
  return new ReadableStream<T>({
    pull(c) {
      if (at >= data.length) c.close();
      else {
        c.enqueue(data.subarray(at, at + chunk) as T);
        at += chunk;
      }
    },
  });
}

/** Runs TTS encodes (pcm_16000, ulaw_8000, wav, opus when the wasm is given) and STT decodes. */
export async function runPipelines(input: PipelineInputs): Promise<Record<string, string>> {
  const withOpus = input.wasm !== undefined;
  if (withOpus) await initOpus({ wasm: decodeBase64(input.wasm!) });
  const bytes = decodeBase64(input.pcm48);
  const pcm = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
  const out: Record<string, string> = {};
  for (const format of ['pcm_16000', 'ulaw_8000', 'wav', ...(withOpus ? ['opus'] : [])]) {
    out[`tts:${format}`] = await collect(source(pcm, 3840).pipeThrough(createTtsEncoderStream(format, { opus: { serial: 42 } })));
  }
  const stt: [string, string][] = [
    ['wav', input.sttWav],
    ['ulaw_8000', input.sttUlaw],
    ...(withOpus ? ([['opus', input.sttOpus]] as [string, string][]) : []),
  ];
  for (const [format, file] of stt) {
    out[`stt:${format}`] = await collect(source(decodeBase64(file), 1000).pipeThrough(createSttDecoderStream(format)));
  }
  return out;
}

(globalThis as { voicewirePipelines?: unknown }).voicewirePipelines = { runPipelines };
