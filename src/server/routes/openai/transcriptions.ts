/**
 * POST /v1/audio/transcriptions, OpenAI's transcription endpoint on the server's STT engine: a
 * multipart form (`file`, `model`, `language`, `response_format`, `timestamp_granularities[]`),
 * run through the same runner, metering and limits as POST /api/post/speech/asr (§4.3).
 *
 * The file: WAV and Ogg Opus are read by voicewire; anything else (mp3, flac, m4a, webm, Ogg
 * Vorbis…) is decoded by ffmpeg when it is installed, else refused (400). The upload is held in
 * memory while it is transcribed: at most `limits.maxAudioBytes` (413 past it), every byte counted
 * against the server's upload budget (upload-budget.ts), and its audio at most
 * `limits.sessionSeconds` long: refused before any work when the container tells its length
 * (audio-length.ts), else when the decoder passes it; either way with `AUDIO_LIMIT_EXCEEDED`, and
 * nothing charged (credits are paid only for an answer sent, issue 31 §5).
 *
 * Answers: `json` `{"text"}`; `text` (plain); `verbose_json` (`task`, `language`, `duration`,
 * `text`, `segments` unless `timestamp_granularities` leaves them out, `words` when it names
 * `word`); `srt` and `vtt` from the segments. Words are the engine's `text` events, each ending at
 * its `end_text` (or the next word); a segment ends at a pause of {@link SEGMENT_PAUSE_S} or more.
 * `prompt` and `temperature` are accepted and ignored.
 *
 * `stream: true` (`json` or `text`; OpenAI streams no other format): server-sent events, each
 * word as a `transcript.text.delta` once its end is known, then `transcript.text.done` with the
 * text and `usage` (transcript-events.ts). Streamed for every model name: all are the server's one
 * engine (OpenAI ignores `stream` for `whisper-1`, a JSON body its own package cannot iterate).
 * Paid as the JSON answer once `transcript.text.done` reached the socket; a client gone or a
 * failure mid-stream pays the started seconds of audio up to the end of the last word it was sent.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VoicewireError, toVoicewireError } from '../../../util/errors.js';
import { PROTOCOL_LANGUAGES, type ProtocolLanguage } from '../../../protocol/validate.js';
import { createSttHttpResponse } from '../../../sessions/http.js';
import { createSttInputDecoder } from '../../../pipelines/stt-audio-decoder.js';
import type { AudioFormatName } from '../../../audio/format.js';
import type { SttEngine } from '../../../sessions/engine.js';
import { feedChild, isFfmpegAvailable, spawnFfmpegWavDecoder, type FfmpegWavDecoder } from '../../../node/ffmpeg.js';
import { sendJson } from '../../http.js';
import type { RequestScope } from '../../context.js';
import { invalidParam } from './errors.js';
import { checkModel } from './models.js';
import { capturingInputDecoder, capturingSttEngine, type ErrorBox } from './capture.js';
import { readUploadForm } from './upload-form.js';
import { ascii, firstBytes, knownSeconds } from './audio-length.js';
import { openAIAuth } from './auth.js';
import { TranscriptEventStream, transcriptUsage } from './transcript-events.js';

/** `response_format`s served here (all of OpenAI's for transcriptions). */
export const OPENAI_TRANSCRIPTION_FORMATS = ['json', 'text', 'verbose_json', 'srt', 'vtt'] as const;
/** A transcription `response_format`. */
export type OpenAITranscriptionFormat = (typeof OPENAI_TRANSCRIPTION_FORMATS)[number];
/** `timestamp_granularities[]` values. */
export const OPENAI_TIMESTAMP_GRANULARITIES = ['word', 'segment'] as const;

/** A pause between words at least this long (seconds) starts a new segment. */
export const SEGMENT_PAUSE_S = 0.8;

/** OpenAI's `language` in verbose answers is the English name. */
const LANGUAGE_NAMES: Record<ProtocolLanguage, string> = { en: 'english', fr: 'french', de: 'german', es: 'spanish', pt: 'portuguese' };

/** One transcribed word, seconds from the start of the file. */
export interface TranscribedWord {
  word: string;
  start: number;
  end: number;
}

/** One segment of a verbose answer (OpenAI's shape; the model statistics are not measured: 0). */
export interface TranscriptionSegment {
  id: number;
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number;
}

/** `wav` or `opus` when voicewire reads the file itself (RIFF/RF64; Ogg whose first packet is OpusHead, RFC 7845 §5.1), else null. */
export function nativeInputFormat(bytes: Uint8Array): AudioFormatName | null {
  const tag = ascii(bytes, 0, 4);
  if (tag === 'RIFF' || tag === 'RF64') return 'wav';
  if (tag === 'OggS' && bytes.length >= 36 && ascii(bytes, 28, 36) === 'OpusHead') return 'opus';
  return null;
}

/** A validated transcription request. */
export interface TranscriptionRequest {
  model: string;
  language: ProtocolLanguage | null;
  format: OpenAITranscriptionFormat;
  words: boolean;
  segments: boolean;
  /** `stream: true`: server-sent events (json and text formats only). */
  stream: boolean;
}

/** The formats OpenAI streams (its gpt-4o models answer only `json`, diarize `json`/`text`). */
const STREAMED_FORMATS: readonly OpenAITranscriptionFormat[] = ['json', 'text'];

/**
 * Validates the form's fields.
 * @throws VoicewireError `INVALID_ARGUMENT` with the field as `param` (400).
 */
export function parseTranscriptionFields(fields: ReadonlyMap<string, readonly string[]>): TranscriptionRequest {
  const one = (k: string): string | undefined => fields.get(k)?.at(-1);
  const model = checkModel(one('model'), 'stt');
  const language = one('language');
  if (language !== undefined && language !== '' && !(PROTOCOL_LANGUAGES as readonly string[]).includes(language)) {
    throw invalidParam('language', `language must be one of ${PROTOCOL_LANGUAGES.join(', ')} (ISO-639-1)`);
  }
  const format = one('response_format') ?? 'json';
  if (!(OPENAI_TRANSCRIPTION_FORMATS as readonly string[]).includes(format)) {
    throw invalidParam('response_format', `response_format must be one of ${OPENAI_TRANSCRIPTION_FORMATS.join(', ')}`);
  }
  // The openai package sends booleans in a form as `true` / `false`.
  const stream = one('stream') ?? 'false';
  if (stream !== 'true' && stream !== 'false') throw invalidParam('stream', `stream must be true or false, got ${JSON.stringify(stream)}`);
  if (stream === 'true' && !STREAMED_FORMATS.includes(format as OpenAITranscriptionFormat)) {
    throw invalidParam('response_format', `response_format ${format} cannot be streamed: with stream true, use ${STREAMED_FORMATS.join(' or ')}`);
  }
  const granularities = [...(fields.get('timestamp_granularities[]') ?? []), ...(fields.get('timestamp_granularities') ?? [])];
  for (const g of granularities) {
    if (!(OPENAI_TIMESTAMP_GRANULARITIES as readonly string[]).includes(g)) {
      throw invalidParam('timestamp_granularities', `timestamp_granularities must hold ${OPENAI_TIMESTAMP_GRANULARITIES.join(' and/or ')}, got ${JSON.stringify(g)}`);
    }
  }
  if (granularities.length > 0 && format !== 'verbose_json') throw invalidParam('timestamp_granularities', 'timestamp_granularities needs response_format verbose_json');
  return {
    model,
    language: language === undefined || language === '' ? null : (language as ProtocolLanguage),
    format: format as OpenAITranscriptionFormat,
    words: granularities.includes('word'),
    segments: granularities.length === 0 || granularities.includes('segment'),
    stream: stream === 'true',
  };
}

/** Groups words into segments at pauses of {@link SEGMENT_PAUSE_S} or more. */
export function segmentWords(words: readonly TranscribedWord[]): TranscriptionSegment[] {
  const out: TranscriptionSegment[] = [];
  let cur: TranscribedWord[] = [];
  const close = (): void => {
    if (cur.length === 0) return;
    out.push({
      id: out.length, seek: 0, start: cur[0]!.start, end: cur.at(-1)!.end, text: cur.map((w) => w.word).join(' '),
      tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0,
    });
    cur = [];
  };
  for (const w of words) {
    if (cur.length > 0 && w.start - cur.at(-1)!.end >= SEGMENT_PAUSE_S) close();
    cur.push(w);
  }
  close();
  return out;
}

/** `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT). */
function clock(seconds: number, sep: ',' | '.'): string {
  const ms = Math.round(seconds * 1000);
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${p(Math.floor(ms / 3_600_000))}:${p(Math.floor(ms / 60_000) % 60)}:${p(Math.floor(ms / 1000) % 60)}${sep}${p(ms % 1000, 3)}`;
}

/** SubRip or WebVTT captions of the segments. */
export function captions(segments: readonly TranscriptionSegment[], kind: 'srt' | 'vtt'): string {
  const sep = kind === 'srt' ? ',' : '.';
  const cues = segments.map((s, i) => `${kind === 'srt' ? `${i + 1}\n` : ''}${clock(s.start, sep)} --> ${clock(s.end, sep)}\n${s.text}\n`);
  return (kind === 'vtt' ? 'WEBVTT\n\n' : '') + cues.join('\n');
}

/**
 * What the transcription loop yields, as the engine decodes: each word once its end is known
 * (its `end_text`, or the next word's start), then the audio's duration, last.
 */
export type TranscriptionEvent = { type: 'word'; word: TranscribedWord } | { type: 'done'; duration: number };

/** Where a transcription's failure is kept: the engine's own error, or the input decoder's. */
interface Failures {
  engine: ErrorBox;
  decoder: ErrorBox;
}

/**
 * Runs the STT runner over `body` (audio in `format`) and yields its words as they are decoded.
 * A failure throws the engine's error (credits, a busy server), else the decoder's (a limit, bad
 * audio), else the runner's message. Once `gone()` holds (the client left) it throws at the
 * runner's next line (one per 80 ms frame): leaving the loop ends the runner's session, which
 * stops the engine, instead of transcribing the rest of the file for no one.
 */
async function* transcribeEvents(
  scope: RequestScope,
  engine: SttEngine,
  failures: Failures,
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  format: AudioFormatName,
  language: ProtocolLanguage | null,
  gone: () => boolean,
): AsyncGenerator<TranscriptionEvent> {
  const query: Record<string, string> = { input_format: format };
  if (language !== null) query['json_config'] = JSON.stringify({ language });
  const lines = createSttHttpResponse({
    engine: capturingSttEngine(engine, failures.engine),
    body,
    query,
    // A request holds no more audio than a session may last (as POST /api/post/speech/asr).
    createInputDecoder: (f) => capturingInputDecoder(createSttInputDecoder(f, { maxDecodedSeconds: scope.ctx.config.limits.sessionSeconds }), failures.decoder),
  });
  let open: TranscribedWord | undefined;
  let duration = 0;
  // A failure before the runner's first line throws from the iterator (http.ts), after it comes
  // as an `error` line: either way the cause kept by the capture wins (credits → 429, not 400).
  const cause = (err: unknown): unknown => failures.engine.error ?? failures.decoder.error ?? err;
  try {
    for await (const line of lines) {
      if (gone()) throw new VoicewireError('PROTOCOL_CONNECTION_CLOSED', 'the client went away before its transcription ended');
      const m = JSON.parse(line) as { type: string; text?: string; start_s?: number; stop_s?: number; total_duration_s?: number; message?: string };
      if (m.type === 'text' && typeof m.text === 'string' && m.text.trim() !== '') {
        const start = m.start_s ?? 0;
        if (open !== undefined) yield { type: 'word', word: { ...open, end: Math.max(open.start, start) } };
        open = { word: m.text.trim(), start, end: Number.NaN };
      } else if (m.type === 'end_text') {
        if (open !== undefined) yield { type: 'word', word: { ...open, end: m.stop_s ?? open.start } };
        open = undefined;
      } else if (m.type === 'step' && typeof m.total_duration_s === 'number') duration = m.total_duration_s;
      else if (m.type === 'error') throw cause(new VoicewireError('PROTOCOL_SERVER_ERROR', m.message ?? 'transcription failed'));
    }
  } catch (err) {
    throw cause(err);
  }
  if (open !== undefined) yield { type: 'word', word: { ...open, end: Math.max(open.start, duration) } };
  yield { type: 'done', duration };
}

/**
 * The failure to answer when ffmpeg fed the transcription: the engine's error, then a limit of the
 * decoder (ffmpeg then dies of a broken pipe: that is not the cause), then ffmpeg's own exit
 * (a file it cannot read makes an empty or broken WAV: its message says why), else `err`.
 */
async function ffmpegFailure(err: unknown, failures: Failures, decoder: FfmpegWavDecoder): Promise<unknown> {
  if (failures.engine.error !== undefined) return failures.engine.error;
  if (failures.decoder.error?.code === 'AUDIO_LIMIT_EXCEEDED') return failures.decoder.error;
  const exit = await Promise.race([decoder.exited.then(() => undefined, (e: unknown) => e), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
  return exit ?? err;
}

const overLimit = (seconds: number, limit: number): VoicewireError =>
  new VoicewireError('AUDIO_LIMIT_EXCEEDED', `the file holds ${seconds.toFixed(1)} s of audio, over the limit of ${limit} s per request`, { details: { param: 'file', maxDecodedSeconds: limit } });

/**
 * Handles POST /v1/audio/transcriptions. One release path (issue 31 §1): whichever way the request
 * ends (answered, refused, failed, its client gone mid-upload or mid-transcription, node:http's
 * 408), the `finally` gives back its session slot, its upload bytes, its ffmpeg child and its
 * credit hold; credits are paid only for an answer sent (nothing for a refusal, §5; a stream cut
 * short, the started seconds up to the end of the last word it sent).
 */
export async function postTranscription(scope: RequestScope, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { ctx, log } = scope;
  const who = await openAIAuth(ctx, req);
  const release = ctx.sessions.open('openai_transcription', who.key.id);
  const upload = ctx.uploads.lease(who.key.id);
  const started = performance.now();
  let decoder: FfmpegWavDecoder | undefined;
  let answered = false;
  let stream: TranscriptEventStream | undefined;
  let settleBill: (delivered: boolean | number) => void = () => undefined;
  const delivered = new Promise<boolean | number>((resolve) => (settleBill = resolve));
  // A client gone mid-transcription: ffmpeg stops (which ends the audio) and the loop stops reading.
  let gone = false;
  const onClose = (): void => {
    gone = true;
    decoder?.kill();
  };
  res.once('close', onClose);
  try {
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > ctx.config.limits.maxAudioBytes) {
      throw new VoicewireError('LIMIT_EXCEEDED', `request body of ${declared} bytes is over the limit of ${ctx.config.limits.maxAudioBytes}`, { details: { param: 'file', status: 413 } });
    }
    const form = await readUploadForm(req, res, ctx.config.limits.maxAudioBytes, upload);
    const r = parseTranscriptionFields(form.fields);
    const file = form.file;
    if (file === null || file.bytes === 0) throw invalidParam('file', 'file is required: the audio to transcribe');
    const native = nativeInputFormat(firstBytes(file.chunks, 36));
    if (native === null && !isFfmpegAvailable()) {
      throw invalidParam('file', `this file is not WAV or Ogg Opus, and other formats (mp3, flac, m4a, webm, …) need ffmpeg, which is not installed on this server`);
    }
    // Refused before any work when the container tells its length (§5): nothing spent.
    const limit = ctx.config.limits.sessionSeconds;
    const seconds = await knownSeconds(file.chunks, file.bytes, native, (task) => ctx.ffmpeg.run(who.key.id, task));
    if (seconds !== null && seconds > limit) throw overLimit(seconds, limit);
    const failures: Failures = { engine: {}, decoder: {} };
    // What the meter holds is what the request costs once delivered: the streamed `usage` says it.
    let held = 0;
    const engine = ctx.sttEngine(who, { delivered, held: (s) => (held = s) });
    // A client that reads nothing for the idle limit is cut, as the speech stream's (README limits).
    if (r.stream) stream = new TranscriptEventStream(res, scope.requestId, ctx.config.limits.idleSeconds * 1000);
    let body: AsyncIterable<Uint8Array> | Iterable<Uint8Array> = file.chunks;
    if (native === null) {
      const dec = ctx.ffmpeg.start(who.key.id, () => spawnFfmpegWavDecoder({ input: { pipe: true } }));
      decoder = dec;
      void feedChild(dec.stdin!, chunksOf(file.chunks)).catch(() => {});
      body = dec.stdout as AsyncIterable<Uint8Array>;
    }
    const words: TranscribedWord[] = [];
    let duration = 0;
    try {
      for await (const e of transcribeEvents(scope, engine, failures, body, native ?? 'wav', r.language, () => gone)) {
        if (gone) throw new VoicewireError('PROTOCOL_CONNECTION_CLOSED', 'the client went away before its transcription ended');
        if (e.type === 'word') {
          words.push(e.word);
          await stream?.delta(e.word.word, e.word.end);
        } else duration = e.duration;
      }
      await decoder?.exited;
    } catch (err) {
      const cause = decoder === undefined ? err : await ffmpegFailure(err, failures, decoder);
      // Once events were sent the status is spent: the failure is the stream's last event.
      if (stream?.started !== true || gone) throw cause;
      const e = toVoicewireError(cause);
      ctx.metrics.errors.inc({ code: e.code });
      log.info({ route: 'openai_transcription', code: e.code, error: e.message, words: words.length }, 'openai transcription stream failed');
      stream.fail(e);
      return;
    }
    if (gone) return;
    if (stream === undefined) {
      answerTranscription(res, scope.requestId, r, words, duration);
      answered = true;
    } else answered = await stream.done(words.map((w) => w.word).join(' '), transcriptUsage(held, words.length));
    log.info({ route: 'openai_transcription', words: words.length, seconds: duration, stream: r.stream, ms: Math.round(performance.now() - started) }, 'openai transcription done');
  } finally {
    res.off('close', onClose);
    decoder?.kill();
    // A stream cut short pays for the audio up to its last delivered word (credits.ts).
    settleBill(answered ? true : (stream?.deliveredSeconds ?? false));
    upload.release();
    release();
  }
}

/** Sends the answer in the request's `response_format`. */
function answerTranscription(res: ServerResponse, requestId: string, r: TranscriptionRequest, words: readonly TranscribedWord[], duration: number): void {
  const text = words.map((w) => w.word).join(' ');
  const segments = segmentWords(words);
  res.setHeader('x-request-id', requestId);
  if (r.format === 'json') sendJson(res, 200, { text });
  else if (r.format === 'text' || r.format === 'srt' || r.format === 'vtt') {
    const out = r.format === 'text' ? `${text}\n` : captions(segments, r.format);
    res.writeHead(200, { 'content-type': r.format === 'vtt' ? 'text/vtt; charset=utf-8' : 'text/plain; charset=utf-8' });
    res.end(out);
  } else {
    const verbose: Record<string, unknown> = { task: 'transcribe', language: LANGUAGE_NAMES[r.language ?? 'en'], duration, text };
    if (r.segments) verbose['segments'] = segments;
    if (r.words) verbose['words'] = words;
    sendJson(res, 200, verbose);
  }
}

async function* chunksOf(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* chunks;
}
