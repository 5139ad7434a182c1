/**
 * Where POST /v1/audio/speech writes its audio: the response body as it is (`stream_format:
 * "audio"`, the default), or OpenAI's server-sent events (`stream_format: "sse"`): one
 * `speech.audio.delta` event per chunk, `{"type":"speech.audio.delta","audio":"<base64>"}`, sent
 * as soon as the engine (or ffmpeg) hands the chunk over, then
 * `{"type":"speech.audio.done","usage":{…}}`. A failure after the status is sent cuts a body
 * response (it cannot carry an error) and ends an event stream with `data: {"error":{…}}`, which
 * the `openai` package's stream reader (`Stream.fromSSEResponse`) raises as an `APIError`.
 */
import type { ServerResponse } from 'node:http';
import { write } from '../../http.js';
import { openAIErrorResponse } from './errors.js';

/** `usage` of `speech.audio.done`: this server bills characters, so the input is counted in characters and no audio tokens are counted. */
export interface SpeechUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

/** The response side of a speech answer. */
export interface SpeechSink {
  /** Sends the status and headers; `contentType` is the audio's. */
  start(contentType: string): void;
  /** One chunk of audio, in order; resolves once the client can take more. */
  write(chunk: Uint8Array): Promise<void> | undefined;
  /** The audio is complete. */
  end(): Promise<void> | void;
  /** A failure after {@link start}: cut, or an error event. */
  abort(error: unknown): void;
  /** The client went away. */
  readonly gone: boolean;
}

/** The body sink (`stream_format: "audio"`). */
export function bodySink(res: ServerResponse, requestId: string, stallMs: number): SpeechSink {
  return {
    start: (contentType) => void res.writeHead(200, { 'content-type': contentType, 'x-request-id': requestId }),
    write: (chunk) => write(res, chunk, stallMs),
    end: () => void res.end(),
    abort: () => void res.destroy(),
    get gone() {
      return res.destroyed;
    },
  };
}

/** The event-stream sink (`stream_format: "sse"`); `characters` is the input's length, for `usage`. */
export function sseSink(res: ServerResponse, requestId: string, stallMs: number, characters: number): SpeechSink {
  const event = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;
  return {
    start: () => void res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': requestId }),
    write: (chunk) => write(res, event({ type: 'speech.audio.delta', audio: Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('base64') }), stallMs),
    end: async () => {
      const usage: SpeechUsage = { input_tokens: characters, output_tokens: 0, total_tokens: characters };
      await write(res, event({ type: 'speech.audio.done', usage }), stallMs);
      res.end();
    },
    abort: (error) => {
      if (res.destroyed) return;
      res.end(event(openAIErrorResponse(error).body));
    },
    get gone() {
      return res.destroyed;
    },
  };
}
