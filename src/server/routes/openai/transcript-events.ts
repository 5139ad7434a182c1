/**
 * The answer of POST /v1/audio/transcriptions with `stream: true`, as OpenAI streams it and its
 * `openai` package types it (resources/audio/transcriptions.d.ts `TranscriptionStreamEvent`):
 * `text/event-stream`, each event one `data:` line of JSON (as speech-sink.ts, docs/api.md §10),
 * a `transcript.text.delta` per word (`delta` the word, after a space from the second on, so the
 * deltas joined are the text), then one `transcript.text.done` with `text` and `usage`. A failure
 * after the stream started is an error event, `{"type":"error","error":{message,type,param,code}}`
 * (the package's reader throws any event holding `error` as an `APIError`, core/streaming.js),
 * and the stream ends. `logprobs` and `segment_id` are not sent: no engine measures token
 * probabilities, and there is no diarization. A client that reads nothing for `stallMs` is cut
 * (http.ts `write`), as the speech stream's.
 *
 * The stream opens at its first event: a failure before it (no credits, a busy server, bad audio
 * found at once) is still the usual JSON error with its status.
 */
import type { ServerResponse } from 'node:http';
import { write } from '../../http.js';
import { openAIErrorResponse } from './errors.js';

/** `usage` of `transcript.text.done` (the package's `TranscriptionTextDoneEvent.Usage`). */
export interface TranscriptUsage {
  type: 'tokens';
  /** The credits the transcription costs: one a started second of audio (credits.ts). */
  input_tokens: number;
  /** The words of the text. */
  output_tokens: number;
  total_tokens: number;
  input_token_details: { audio_tokens: number; text_tokens: number };
}

/** The usage of a transcription of `seconds` started seconds of audio into `words` words. */
export function transcriptUsage(seconds: number, words: number): TranscriptUsage {
  return { type: 'tokens', input_tokens: seconds, output_tokens: words, total_tokens: seconds + words, input_token_details: { audio_tokens: seconds, text_tokens: 0 } };
}

/** Writes a streamed transcription's events on `res`, and keeps what its client was given. */
export class TranscriptEventStream {
  private opened = false;
  private words = 0;
  private delivered = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly requestId: string,
    private readonly stallMs: number,
  ) {}

  /** True once the head was written: from then on a failure can only be an `error` event. */
  get started(): boolean {
    return this.opened;
  }

  /** Seconds of audio whose words the socket took: the end of the last word delivered (0 before any). */
  get deliveredSeconds(): number {
    return this.delivered;
  }

  private open(): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': this.requestId });
  }

  /**
   * Writes one event (JSON.stringify escapes line breaks: one `data:` line). Resolves true once the
   * socket took it (at once, or at its `drain`), false when the response was closed first.
   * @throws VoicewireError `LIMIT_EXCEEDED` when the client read nothing for `stallMs` (cut).
   */
  private async send(data: unknown): Promise<boolean> {
    const res = this.res;
    if (res.destroyed || res.writableEnded) return false;
    await write(res, `data: ${JSON.stringify(data)}\n\n`, this.stallMs);
    return !res.destroyed;
  }

  /** Sends one word, ending at `end` seconds of the audio. */
  async delta(word: string, end: number): Promise<void> {
    this.open();
    const delta = this.words === 0 ? word : ` ${word}`;
    this.words++;
    if (await this.send({ type: 'transcript.text.delta', delta })) this.delivered = Math.max(this.delivered, end);
  }

  /** Sends `transcript.text.done` and ends the stream. Resolves true when the socket took it. */
  async done(text: string, usage: TranscriptUsage): Promise<boolean> {
    this.open();
    const ok = await this.send({ type: 'transcript.text.done', text, usage });
    this.res.end();
    return ok;
  }

  /** Sends an error event in OpenAI's form and ends the stream (a client gone or stalled: nothing). */
  fail(error: unknown): void {
    this.open();
    if (this.res.destroyed || this.res.writableEnded) return;
    this.res.end(`data: ${JSON.stringify({ type: 'error', ...openAIErrorResponse(error).body })}\n\n`);
  }
}
