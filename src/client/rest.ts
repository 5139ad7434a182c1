/**
 * The REST routes of the service for the SDK: voices and voice design (§4.7–§4.10 and the core
 * routes the service's own clients call), pronunciations (§4.11), credits (§4.12), temporary
 * tokens (§4.6). Answers are checked with the library's resource parsers.
 */
import { VoicewireError } from '../util/errors.js';
import { objectArg, optionsArg, stringArg } from '../util/args.js';
import {
  parseCreatedVoice,
  parseCreditBalance,
  parsePronunciationList,
  parseTemporaryToken,
  parseVoice,
  parseVoiceGenerationResponse,
  parseVoiceList,
  type CreatedVoice,
  type CreditBalance,
  type PronunciationList,
  type TemporaryToken,
  type Voice,
  type VoiceCandidate,
} from '../protocol/resources.js';
import type { ClientContext } from './context.js';

/** Options of `voices.list`. */
export interface VoiceListOptions {
  /** Default true: catalog voices too. */
  includeCatalog?: boolean;
  /** Default 0, which the service reads as "every voice". */
  limit?: number;
  offset?: number;
  signal?: AbortSignal;
}

/** A voice made from a short sample (`POST /voices/`, multipart). */
export interface VoiceFromSample {
  audio: Uint8Array;
  name: string;
  description?: string;
  /** Where the voice starts in the sample, seconds. Default 0. */
  startS?: number;
  /** Default `wav`. */
  inputFormat?: string;
}

export class VoicesApi {
  constructor(private readonly ctx: ClientContext) {}

  async list(opts?: VoiceListOptions): Promise<Voice[]> {
    const options = optionsArg(opts, 'voices.list options');
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new VoicewireError('INVALID_ARGUMENT', 'voices.list: signal must be an AbortSignal');
    const query = { limit: options.limit ?? 0, offset: options.offset, include_catalog: options.includeCatalog ?? true ? 1 : 0 };
    return parseVoiceList(await this.ctx.json('GET', 'voices/', { query, signal: options.signal }));
  }

  async get(uid: string): Promise<Voice> {
    return parseVoice(await this.ctx.json('GET', `voices/${encodeURIComponent(checkId('uid', uid))}`));
  }

  async create(voice: VoiceFromSample): Promise<CreatedVoice> {
    objectArg(voice, 'voices.create voice');
    if (!(voice.audio instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', 'voices.create: audio must be a Uint8Array');
    stringArg(voice.name, 'voices.create name');
    if (voice.description !== undefined) stringArg(voice.description, 'voices.create description');
    if (voice.startS !== undefined && (typeof voice.startS !== 'number' || !(voice.startS >= 0))) throw new VoicewireError('INVALID_ARGUMENT', 'voices.create: startS must be a number >= 0');
    if (voice.inputFormat !== undefined) stringArg(voice.inputFormat, 'voices.create inputFormat');
    const form = new FormData();
    form.set('audio_file', new Blob([voice.audio as Uint8Array<ArrayBuffer>]), 'sample.wav');
    form.set('name', voice.name);
    form.set('description', voice.description ?? '');
    form.set('start_s', String(voice.startS ?? 0));
    form.set('input_format', voice.inputFormat ?? 'wav');
    return parseCreatedVoice(await this.ctx.json('POST', 'voices/', { body: form }));
  }

  async update(uid: string, patch: { name?: string; description?: string }): Promise<Voice> {
    return parseVoice(await this.ctx.json('PUT', `voices/${encodeURIComponent(checkId('uid', uid))}`, { json: objectArg(patch, 'voices.update patch') }));
  }

  async delete(uid: string): Promise<void> {
    await this.ctx.request('DELETE', `voices/${encodeURIComponent(checkId('uid', uid))}`);
  }

  /** Voice design (§4.7): candidates that are variations on one character; they expire. */
  async design(prompt: string, opts?: { nSamples?: number; language?: string; jsonConfig?: Record<string, unknown> }): Promise<VoiceCandidate[]> {
    stringArg(prompt, 'voices.design prompt');
    const options = optionsArg(opts, 'voices.design options');
    const body: Record<string, unknown> = { prompt, n_samples: options.nSamples ?? 1, language: options.language ?? 'en' };
    if (options.jsonConfig !== undefined) body['json_config'] = options.jsonConfig;
    return parseVoiceGenerationResponse(await this.ctx.json('POST', 'voice-generator/generate', { json: body })).embeddings;
  }

  /** Keeps a candidate as a voice of the organization (§4.8). */
  async keep(candidate: VoiceCandidate | string, voice: { name: string; description?: string }): Promise<CreatedVoice> {
    const id = typeof candidate === 'string' ? candidate : candidate?.embedding_id;
    objectArg(voice, 'voices.keep voice');
    const body = { voice_embedding_id: checkId('candidate', id), name: stringArg(voice.name, 'voices.keep name'), description: voice.description === undefined ? '' : stringArg(voice.description, 'voices.keep description') };
    return parseCreatedVoice(await this.ctx.json('POST', 'voices/from-embedding', { json: body }));
  }

  /** Deletes a candidate (§4.9). */
  async discard(candidate: VoiceCandidate | string): Promise<void> {
    const id = typeof candidate === 'string' ? candidate : candidate?.embedding_id;
    await this.ctx.request('DELETE', `voice-generator/embeddings/${encodeURIComponent(checkId('candidate', id))}`);
  }
}

export class PronunciationsApi {
  constructor(private readonly ctx: ClientContext) {}

  async list(opts?: { limit?: number; offset?: number }): Promise<PronunciationList> {
    const options = optionsArg(opts, 'pronunciations.list options');
    return parsePronunciationList(await this.ctx.json('GET', 'pronunciations/', { query: { limit: options.limit, offset: options.offset } }));
  }
}

export async function credits(ctx: ClientContext): Promise<CreditBalance> {
  return parseCreditBalance(await ctx.json('GET', 'usages/credits'));
}

export async function token(ctx: ClientContext): Promise<TemporaryToken> {
  return parseTemporaryToken(await ctx.json('GET', 'api-keys/token'));
}

function checkId(what: string, id: unknown): string {
  if (typeof id !== 'string' || id === '') throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a non-empty string`);
  return id;
}
