/**
 * POST /v1/audio/transcriptions, OpenAI's transcription endpoint on the server's STT engine: a
 * multipart form (`file`, `model`, `language`, `response_format`, `timestamp_granularities[]`),
 * run through the same runner, metering and limits as POST /api/post/speech/asr (§4.3).
 *
 * The file: WAV and Ogg Opus are read by voicewire; anything else (mp3, flac, m4a, webm, Ogg
 * Vorbis…) is decoded by ffmpeg when it is installed, else refused (400). The upload is held in
 * memory while it is transcribed: at most `limits.maxAudioBytes` (413 past it), and its decoded
 * audio at most `limits.sessionSeconds` long.
 *
 * Answers: `json` `{"text"}`; `text` (plain); `verbose_json` (`task`, `language`, `duration`,
 * `text`, `segments` unless `timestamp_granularities` leaves them out, `words` when it names
 * `word`); `srt` and `vtt` from the segments. Words are the engine's `text` events, each ending at
 * its `end_text` (or the next word); a segment ends at a pause of {@link SEGMENT_PAUSE_S} or more.
 * `prompt` and `temperature` are accepted and ignored.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import busboy from 'busboy';
import { VoicewireError } from '../../../util/errors.js';
import { PROTOCOL_LANGUAGES, type ProtocolLanguage } from '../../../protocol/validate.js';
import { createSttHttpResponse } from '../../../sessions/http.js';
import { createSttInputDecoder } from '../../../pipelines/stt-audio-decoder.js';
import type { AudioFormatName } from '../../../audio/format.js';
import { feedChild, isFfmpegAvailable, spawnFfmpegWavDecoder, type FfmpegWavDecoder } from '../../../node/ffmpeg.js';
import { sendJson } from '../../http.js';
import type { RequestScope } from '../../context.js';
import { invalidParam } from './errors.js';
import { checkModel } from './models.js';
import { capturingSttEngine, type ErrorBox } from './capture.js';
import { openAIAuth } from './auth.js';

/** `response_format`s served here (all of OpenAI's for transcriptions). */
export const OPENAI_TRANSCRIPTION_FORMATS = ['json', 'text', 'verbose_json', 'srt', 'vtt'] as const;
/** A transcription `response_format`. */
export type OpenAITranscriptionFormat = (typeof OPENAI_TRANSCRIPTION_FORMATS)[number];
/** `timestamp_granularities[]` values. */
export const OPENAI_TIMESTAMP_GRANULARITIES = ['word', 'segment'] as const;

/** A pause between words at least this long (seconds) starts a new segment. */
export const SEGMENT_PAUSE_S = 0.8;

/** Most form fields read, and most bytes of one field (a `prompt` is short text). */
const MAX_FIELDS = 20;
const MAX_FIELD_BYTES = 64 << 10;

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

interface Form {
  fields: Map<string, string[]>;
  file: { name: string; chunks: Uint8Array[]; bytes: number } | null;
}

/** Reads the form: fields, and the `file` part's bytes (at most `maxBytes`: LIMIT_EXCEEDED 413 past it). */
function readForm(req: IncomingMessage, maxBytes: number): Promise<Form> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { fileSize: maxBytes, files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES } });
    } catch (err) {
      reject(invalidParam('file', `expected a multipart/form-data body: ${(err as Error).message}`));
      return;
    }
    const form: Form = { fields: new Map(), file: null };
    bb.on('field', (name, value) => form.fields.set(name, [...(form.fields.get(name) ?? []), value]));
    bb.on('file', (name, stream, info) => {
      if (name !== 'file') {
        stream.resume();
        return;
      }
      const file = { name: info.filename ?? 'audio', chunks: [] as Uint8Array[], bytes: 0 };
      stream.on('data', (d: Buffer) => {
        file.chunks.push(d);
        file.bytes += d.length;
      });
      stream.on('limit', () => {
        req.unpipe(bb);
        req.resume();
        reject(new VoicewireError('LIMIT_EXCEEDED', `file is over the limit of ${maxBytes} bytes`, { details: { param: 'file', status: 413 } }));
      });
      stream.on('end', () => (form.file = file));
    });
    bb.on('error', (err: Error) => reject(invalidParam('file', `the multipart body could not be read: ${err.message}`)));
    bb.on('close', () => resolve(form));
    req.pipe(bb);
  });
}

/** The first `n` bytes across chunks. */
function head(chunks: readonly Uint8Array[], n: number): Uint8Array {
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    if (at >= n) break;
    const take = Math.min(c.length, n - at);
    out.set(c.subarray(0, take), at);
    at += take;
  }
  return out.subarray(0, at);
}

const ascii = (b: Uint8Array, from: number, to: number): string => String.fromCharCode(...b.subarray(from, to));

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
}

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
  // OpenAI streams transcription events (SSE) for stream=true; answering one JSON body instead
  // would leave such a client waiting for events, so it is refused, not ignored.
  const stream = one('stream');
  if (stream !== undefined && stream !== 'false') throw invalidParam('stream', 'stream is not offered: send stream false or leave it out');
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

/** Runs the STT runner over the file; returns the words and the audio's duration. */
async function transcribe(
  scope: RequestScope,
  engineBox: { engine: ReturnType<RequestScope['ctx']['sttEngine']>; box: ErrorBox },
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  format: AudioFormatName,
  language: ProtocolLanguage | null,
): Promise<{ words: TranscribedWord[]; duration: number }> {
  const { ctx } = scope;
  const query: Record<string, string> = { input_format: format };
  if (language !== null) query['json_config'] = JSON.stringify({ language });
  const lines = createSttHttpResponse({
    engine: capturingSttEngine(engineBox.engine, engineBox.box),
    body,
    query,
    // A request holds no more audio than a session may last (as POST /api/post/speech/asr).
    createInputDecoder: (f) => createSttInputDecoder(f, { maxDecodedSeconds: ctx.config.limits.sessionSeconds }),
  });
  const words: TranscribedWord[] = [];
  let duration = 0;
  for await (const line of lines) {
    const m = JSON.parse(line) as { type: string; text?: string; start_s?: number; stop_s?: number; total_duration_s?: number; message?: string };
    if (m.type === 'text' && typeof m.text === 'string' && m.text.trim() !== '') words.push({ word: m.text.trim(), start: m.start_s ?? 0, end: Number.NaN });
    else if (m.type === 'end_text') {
      const open = words.at(-1);
      if (open !== undefined && Number.isNaN(open.end)) open.end = m.stop_s ?? open.start;
    } else if (m.type === 'step' && typeof m.total_duration_s === 'number') duration = m.total_duration_s;
    else if (m.type === 'error') throw engineBox.box.error ?? new VoicewireError('PROTOCOL_SERVER_ERROR', m.message ?? 'transcription failed');
  }
  words.forEach((w, i) => {
    if (Number.isNaN(w.end)) w.end = Math.max(w.start, words[i + 1]?.start ?? duration);
  });
  return { words, duration };
}

/** Handles POST /v1/audio/transcriptions. */
export async function postTranscription(scope: RequestScope, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { ctx, log } = scope;
  const who = await openAIAuth(ctx, req);
  const release = ctx.sessions.open('openai_transcription', who.key.id);
  const started = performance.now();
  let decoder: FfmpegWavDecoder | undefined;
  try {
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > ctx.config.limits.maxAudioBytes) {
      throw new VoicewireError('LIMIT_EXCEEDED', `request body of ${declared} bytes is over the limit of ${ctx.config.limits.maxAudioBytes}`, { details: { param: 'file', status: 413 } });
    }
    const form = await readForm(req, ctx.config.limits.maxAudioBytes);
    const r = parseTranscriptionFields(form.fields);
    if (form.file === null || form.file.bytes === 0) throw invalidParam('file', 'file is required: the audio to transcribe');
    const native = nativeInputFormat(head(form.file.chunks, 36));
    const engineBox = { engine: ctx.sttEngine(who), box: {} as ErrorBox };
    let result: { words: TranscribedWord[]; duration: number };
    if (native !== null) {
      result = await transcribe(scope, engineBox, form.file.chunks, native, r.language);
    } else {
      if (!isFfmpegAvailable()) {
        throw invalidParam('file', `this file is not WAV or Ogg Opus, and other formats (mp3, flac, m4a, webm, …) need ffmpeg, which is not installed on this server`);
      }
      const dec = spawnFfmpegWavDecoder({ input: { pipe: true } });
      decoder = dec;
      void feedChild(dec.stdin!, toAsync(form.file.chunks)).catch(() => {});
      try {
        result = await transcribe(scope, engineBox, dec.stdout as AsyncIterable<Uint8Array>, 'wav', r.language);
        await dec.exited;
      } catch (err) {
        // A file ffmpeg cannot read makes an empty or broken WAV: its own message says why.
        if (engineBox.box.error !== undefined) throw engineBox.box.error;
        const ffmpegError = await Promise.race([dec.exited.then(() => undefined, (e: unknown) => e), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
        throw ffmpegError ?? err;
      }
    }
    const text = result.words.map((w) => w.word).join(' ');
    const segments = segmentWords(result.words);
    res.setHeader('x-request-id', scope.requestId);
    if (r.format === 'json') sendJson(res, 200, { text });
    else if (r.format === 'text' || r.format === 'srt' || r.format === 'vtt') {
      const out = r.format === 'text' ? `${text}\n` : captions(segments, r.format);
      res.writeHead(200, { 'content-type': r.format === 'vtt' ? 'text/vtt; charset=utf-8' : 'text/plain; charset=utf-8' });
      res.end(out);
    } else {
      const verbose: Record<string, unknown> = { task: 'transcribe', language: LANGUAGE_NAMES[r.language ?? 'en'], duration: result.duration, text };
      if (r.segments) verbose['segments'] = segments;
      if (r.words) verbose['words'] = result.words;
      sendJson(res, 200, verbose);
    }
    log.info({ route: 'openai_transcription', words: result.words.length, seconds: result.duration, ms: Math.round(performance.now() - started) }, 'openai transcription done');
  } finally {
    decoder?.kill();
    release();
  }
}

async function* toAsync(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* chunks;
}
