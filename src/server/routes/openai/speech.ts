/**
 * POST /v1/audio/speech, OpenAI's speech endpoint on the server's TTS engine: the body is OpenAI's
 * (`model`, `input`, `voice`, `response_format`, `speed`), the answer the audio bytes. It runs
 * through the same runner, metering and limits as POST /api/post/speech/tts (§4.2).
 *
 * Formats: `wav`, `pcm` (24 kHz s16le mono, as OpenAI's) and `opus` (Ogg Opus) are voicewire's
 * own; `mp3`, `flac` and `aac` are encoded by ffmpeg when it is installed, else refused (400).
 * `response_format` defaults to `mp3` as OpenAI's does, or to `wav` without ffmpeg.
 *
 * `stream_format: "sse"` answers with OpenAI's speech events instead of the bytes (speech-sink.ts):
 * a `speech.audio.delta` per chunk as the engine makes it, then `speech.audio.done`.
 *
 * `speed` (0.25 to 4.0, default 1) becomes §2.8's `padding_bonus` p = −4·log2(speed), clamped to
 * ±4 (espeak speaks at rate·2^(−p/4), so speeds from 0.5 to 2.0 are exact and the rest clamp).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VoicewireError } from '../../../util/errors.js';
import { isRecord } from '../../../protocol/validate.js';
import { TTS_CONFIG_LIMITS } from '../../../protocol/config.js';
import { validateTtsRequestBody } from '../../../protocol/rest.js';
import type { AudioFormatName } from '../../../audio/format.js';
import { isFfmpegAvailable, feedChild } from '../../../node/ffmpeg.js';
import { readJson } from '../../http.js';
import type { RequestScope } from '../../context.js';
import { invalidParam } from './errors.js';
import { checkModel } from './models.js';
import { resolveOpenAIVoice } from './voices.js';
import { capturingTtsEngine, type ErrorBox } from './capture.js';
import { FFMPEG_SPEECH_FORMATS, spawnFfmpegEncoder, type FfmpegSpeechFormat } from './ffmpeg-encoder.js';
import { openAIAuth } from './auth.js';
import { startPaidTtsResponse } from '../paid-tts-response.js';
import { bodySink, sseSink, type SpeechSink } from './speech-sink.js';

/** The formats voicewire encodes itself: the runner's format name and the Content-Type. */
export const NATIVE_SPEECH_FORMATS = Object.freeze({
  wav: { format: 'wav' as AudioFormatName, contentType: 'audio/wav' },
  pcm: { format: 'pcm_24000' as AudioFormatName, contentType: 'audio/pcm' },
  opus: { format: 'opus' as AudioFormatName, contentType: 'audio/ogg; codecs=opus' },
});

/** Every `response_format` of OpenAI's speech API, in its order. */
export const OPENAI_SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
/** A `response_format`. */
export type OpenAISpeechFormat = (typeof OPENAI_SPEECH_FORMATS)[number];

/** `speed`'s range and default (OpenAI's). */
export const OPENAI_SPEED = Object.freeze({ min: 0.25, max: 4, default: 1 });

/** A validated speech request. */
export interface SpeechRequest {
  model: string;
  input: string;
  voice: string;
  format: OpenAISpeechFormat;
  speed: number;
  /** `stream_format`: the bytes (`audio`, default) or server-sent events (`sse`). */
  stream: 'audio' | 'sse';
}

/** The formats served here: the native three, and ffmpeg's when it is installed. */
export function availableSpeechFormats(ffmpeg: boolean): OpenAISpeechFormat[] {
  return OPENAI_SPEECH_FORMATS.filter((f) => ffmpeg || f in NATIVE_SPEECH_FORMATS);
}

/**
 * Validates OpenAI's speech body. `instructions` is accepted and ignored (the engines take no
 * style prompt); `stream_format` is `audio` (default) or `sse`.
 * @throws VoicewireError `INVALID_ARGUMENT` with the field as `param` (400).
 */
export function parseSpeechRequest(body: unknown, options: { ffmpeg: boolean; maxTextChars: number }): SpeechRequest {
  if (!isRecord(body)) throw invalidParam('body', 'the request body must be a JSON object');
  const model = checkModel(body['model'], 'tts');
  const input = body['input'];
  if (typeof input !== 'string' || input.trim() === '') throw invalidParam('input', 'input is required: the text to speak');
  if ([...input].length > options.maxTextChars) throw invalidParam('input', `input is over the limit of ${options.maxTextChars} characters`);
  let voice = body['voice'];
  // Newer OpenAI SDKs may send a custom voice as {"id": "…"}.
  if (isRecord(voice) && typeof voice['id'] === 'string') voice = voice['id'];
  if (typeof voice !== 'string' || voice === '') throw invalidParam('voice', 'voice is required');
  const formats = availableSpeechFormats(options.ffmpeg);
  const rawFormat = body['response_format'] ?? (options.ffmpeg ? 'mp3' : 'wav');
  if (typeof rawFormat !== 'string' || !(OPENAI_SPEECH_FORMATS as readonly string[]).includes(rawFormat)) {
    throw invalidParam('response_format', `response_format must be one of ${formats.join(', ')}`);
  }
  if (!formats.includes(rawFormat as OpenAISpeechFormat)) {
    throw invalidParam('response_format', `response_format ${rawFormat} needs ffmpeg, which is not installed on this server; available: ${formats.join(', ')}`);
  }
  const speed = body['speed'] ?? OPENAI_SPEED.default;
  if (typeof speed !== 'number' || !(speed >= OPENAI_SPEED.min && speed <= OPENAI_SPEED.max)) {
    throw invalidParam('speed', `speed must be a number from ${OPENAI_SPEED.min} to ${OPENAI_SPEED.max}`);
  }
  const streamFormat = body['stream_format'];
  if (streamFormat !== undefined && streamFormat !== 'audio' && streamFormat !== 'sse') throw invalidParam('stream_format', 'stream_format must be audio or sse');
  return { model, input, voice, format: rawFormat as OpenAISpeechFormat, speed, stream: streamFormat === 'sse' ? 'sse' : 'audio' };
}

/** §2.8's `padding_bonus` for an OpenAI `speed`: −4·log2(speed), clamped to ±4, 0 inside the dead zone. */
export function speedToPaddingBonus(speed: number): number {
  const L = TTS_CONFIG_LIMITS.paddingBonus;
  const p = Math.min(L.max, Math.max(L.min, -4 * Math.log2(speed)));
  return Math.abs(p) < L.deadZone ? 0 : Math.round(p * 1000) / 1000;
}

/**
 * Yields `first` and then the rest of `it`, rethrowing a runner failure as the engine's own error;
 * once all of it was taken, `done` (the bill settled before the response ends, as /api's).
 */
async function* audioChunks(first: IteratorResult<Uint8Array | string>, it: AsyncIterator<Uint8Array | string>, box: ErrorBox, done: () => Promise<void>): AsyncGenerator<Uint8Array> {
  try {
    for (let r = first; !r.done; r = await it.next()) if (typeof r.value !== 'string') yield r.value;
  } catch (err) {
    throw box.error ?? err;
  }
  await done();
}

/** Handles POST /v1/audio/speech. */
export async function postSpeech(scope: RequestScope, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { ctx, log } = scope;
  const who = await openAIAuth(ctx, req);
  const engine = ctx.ttsEngine(who);
  const release = ctx.sessions.open('openai_speech', who.key.id);
  const started = performance.now();
  try {
    const r = parseSpeechRequest(await readJson(req, ctx.config.limits.maxJsonBytes, ctx.config.limits.maxJsonDepth), { ffmpeg: isFfmpegAvailable(), maxTextChars: ctx.config.limits.maxTextChars });
    const voiceId = await resolveOpenAIVoice(ctx.store, who.org.id, r.voice);
    const native = r.format in NATIVE_SPEECH_FORMATS ? NATIVE_SPEECH_FORMATS[r.format as keyof typeof NATIVE_SPEECH_FORMATS] : undefined;
    const body = validateTtsRequestBody({
      text: r.input,
      voice_id: voiceId,
      output_format: native?.format ?? 'wav',
      only_audio: true,
      json_config: { padding_bonus: speedToPaddingBonus(r.speed) },
    });
    // Billed as POST /api/post/speech/tts (credits.ts): the whole text held before any work, then
    // paid for the audio taken (all of it once the last chunk was taken), the rest given back.
    const box: ErrorBox = {};
    const { chunks: it } = await startPaidTtsResponse(engine, body, res, [...r.input].length, capturingTtsEngine(engine, box));
    const settle = (): Promise<void> => engine.finish(null, true);
    // The first chunk decides the status: a failure before it is an error answer.
    let first: IteratorResult<Uint8Array | string>;
    try {
      first = await it.next();
    } catch (err) {
      throw box.error ?? err;
    }
    ctx.metrics.timeToFirstAudio.observe({ route: 'openai_speech' }, (performance.now() - started) / 1000);
    const stallMs = ctx.config.limits.idleSeconds * 1000;
    const sink = r.stream === 'sse' ? sseSink(res, scope.requestId, stallMs, [...r.input].length) : bodySink(res, scope.requestId, stallMs);
    if (native !== undefined) {
      sink.start(native.contentType);
      try {
        for await (const chunk of audioChunks(first, it, box, settle)) {
          // A client that went away: stop (a write to a closed response would wait for a drain that never comes).
          if (sink.gone) break;
          await sink.write(chunk);
        }
        if (!sink.gone) await sink.end();
      } catch (err) {
        log.warn({ route: 'openai_speech', error: (err as Error).message }, 'audio response aborted');
        sink.abort(err);
        return;
      }
    } else {
      await encodeWithFfmpeg(r.format as FfmpegSpeechFormat, audioChunks(first, it, box, settle), res, sink, scope, who.key.id);
    }
    log.info({ route: 'openai_speech', chars: r.input.length, format: r.format, stream: r.stream, ms: Math.round(performance.now() - started) }, 'openai speech done');
  } finally {
    // A refused, failed or abandoned request pays for what was taken; the rest of its hold goes back.
    await engine.finishAll();
    release();
  }
}

/** Pipes the engine's WAV through ffmpeg into the sink; the status waits for ffmpeg's first bytes. */
async function encodeWithFfmpeg(format: FfmpegSpeechFormat, wav: AsyncIterable<Uint8Array>, res: ServerResponse, sink: SpeechSink, scope: RequestScope, keyId: string): Promise<void> {
  // Within the server's budget of ffmpeg children (ffmpeg-budget.ts): 503 or 429 before a spawn past it.
  const enc = scope.ctx.ffmpeg.start(keyId, () => spawnFfmpegEncoder(format));
  let failure: unknown;
  // A client that goes away stops ffmpeg: its stdout ends the loop below, its stdin the feeding.
  const onClose = (): void => {
    if (!res.writableFinished) enc.kill();
  };
  res.once('close', onClose);
  try {
    // An engine failure mid-way stops ffmpeg, which ends its stdout and the loop below.
    const feeding = feedChild(enc.stdin, wav).catch((err: unknown) => {
      failure = err;
      enc.kill();
    });
    const out = (enc.stdout as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    const first: IteratorResult<Uint8Array> = await out.next();
    if (first.done === true) {
      await feeding;
      if (failure !== undefined) throw failure;
      await enc.exited;
      throw new VoicewireError('FFMPEG_FAILED', `ffmpeg made no ${format} output`);
    }
    sink.start(FFMPEG_SPEECH_FORMATS[format].contentType);
    for (let r: IteratorResult<Uint8Array> = first; r.done !== true && !sink.gone; r = await out.next()) await sink.write(r.value);
    if (sink.gone) return;
    await feeding;
    if (failure !== undefined) throw failure;
    await enc.exited;
    await sink.end();
  } catch (err) {
    if (!res.headersSent) throw err;
    scope.log.warn({ route: 'openai_speech', error: (err as Error).message }, 'encoded audio response aborted');
    sink.abort(err);
  } finally {
    res.off('close', onClose);
    enc.kill();
  }
}
