/**
 * The server's configuration: one validated object (STYLE.md "The server"). Flags and environment
 * variables resolve into it once (src/cli/serve.ts); `createVoiceServer` takes it with defaults.
 */
import { describeValue, objectArg, optionsArg, shown, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { defaultSttDecoders } from '../engines/budget.js';
import { defaultNativeCalls } from '../engines/fair-limiter.js';
import { DEFAULT_SHERPA_QUEUE, defaultSherpaWorkers } from '../engines/sherpa-pool.js';
import { DEFAULT_SHERPA_STREAMS } from '../engines/sherpa-online.js';
import { parseProxyEntry } from './client-address.js';

/**
 * Limits, each with its default (README "Server"). Fixed, not configurable: JSON a route stores
 * nests at most 32 levels (`MAX_STORED_JSON_DEPTH`, src/server/storable.ts).
 */
export interface ServerLimits {
  /** Largest WebSocket message, bytes. Default 1 MiB (1 048 576). */
  maxFrameBytes: number;
  /**
   * Characters of text per TTS request (POST body or one WebSocket request): the one text limit,
   * checked before any work (a POST is refused up front; a WebSocket request ends before the
   * text that passes it is spoken). Default 20 000.
   */
  maxTextChars: number;
  /** Bytes of audio per STT request (POST body; a `/v1/audio/transcriptions` file, held in memory while transcribed) and per JSON body elsewhere. Default 50 MiB. */
  maxAudioBytes: number;
  /** Bytes of a JSON body (TTS POST, voice design, …). Default 1 MiB. */
  maxJsonBytes: number;
  /**
   * Deepest nesting of arrays and objects in a JSON body or WebSocket message, checked in one pass
   * before parsing: deeper is 422 `json_invalid` (REST, §2.7) or `error` 1008 (WebSocket). Default 64.
   * The protocol parsers refuse past 64 whatever this is (no API message nests past 4).
   */
  maxJsonDepth: number;
  /** Longest WebSocket session, seconds. Default 300. */
  sessionSeconds: number;
  /** WebSocket ping interval, seconds; a peer that misses one pong is dropped (found dead within 2 intervals). Default 25. */
  pingSeconds: number;
  /** A WebSocket that sends nothing for this long is closed (error 1008). Default 60. */
  idleSeconds: number;
  /**
   * Time to receive the request headers, ms (node:http `headersTimeout`). Default 10 000. A
   * connection that sends no complete request within it (+ up to 2 checks of ≤ 1 s), even one
   * that never sends a byte, is closed.
   */
  headersTimeoutMs: number;
  /** A keep-alive connection idle after its response is closed after this long, ms (node:http `keepAliveTimeout`). Default 5 000. */
  keepAliveTimeoutMs: number;
  /** Open TCP connections (HTTP and WebSocket); past it a new one is closed at once. Default 10 000. */
  maxConnections: number;
  /**
   * Open TCP connections from one remote address; past it a new one is closed at once. Default
   * 256. Behind a proxy named in `trustedProxies` it counts the client's address instead: each
   * request and WebSocket session that proxy forwards counts against the address its
   * `X-Forwarded-For` names, while it lasts (one more is refused: `LIMIT_EXCEEDED`), and the
   * proxy's own connections count only against `maxConnections`.
   */
  connectionsPerAddress: number;
  /** WebSocket pings a client may send per second; more is `LIMIT_EXCEEDED` (`error`, then close 1008). Default 50. */
  maxPingsPerSecond: number;
  /** Time to receive a whole request body, ms (node:http `requestTimeout`). Default 120 000. */
  requestTimeoutMs: number;
  /** Live WebSocket connections and streaming requests per API key. Default 50. */
  connectionsPerKey: number;
  /**
   * How long an API key's lookup (key and organization) is reused by authentication, seconds
   * (src/server/auth-cache.ts; 0: every request reads the store). Default 5: a key revoked by the
   * CLI or another instance keeps opening sessions for at most that long (through this server's
   * store, or on Postgres, at once).
   */
  authCacheSeconds: number;
  /** Bytes a WebSocket may hold unsent (ws `bufferedAmount`) before the peer counts as not reading and the socket is cut. Default 16 MiB (≈ 2 min of 48 kHz PCM as JSON). */
  maxBufferedBytes: number;
  /** Longest single engine call (open, text, flush, end; STT push), seconds; past it that request ends with `ENGINE_TIMEOUT` 1011. Default 30. */
  engineTimeoutSeconds: number;
  /** Time for the core API (--core-url) to answer the headers, and between body chunks, ms; past it 504 `FORWARD_TIMEOUT`. Default 30 000. */
  upstreamTimeoutMs: number;
  /** After a drain starts (SIGTERM), how long live sessions may take before they are cut, seconds. Default 30 (+ session limit bound). */
  drainGraceSeconds: number;
  /**
   * Live STT decoders in this process, in use or idle in the engine's pool (a pocketsphinx decoder
   * holds ~95 MB of native memory and takes ~0.3 s of CPU to load). A request that would need one
   * more gets `ENGINE_BUSY`: WebSocket `error` 1011 for that request (a multiplexed socket goes
   * on), POST 503 plain text. Per process: the engine is shared by the process, so the last server
   * created in it sets the budget. Default: a quarter of the machine's memory at 96 MiB per
   * decoder, from 1 to 32 (`defaultSttDecoders()`: 24 GB → 32, 4 GB → 10, 1 GB → 2). An integer.
   */
  sttDecoders: number;
  /**
   * Live requests of a heavy STT engine (one that holds a decoder per stream: pocketsphinx, a
   * `--stt-model`) on one WebSocket (or one POST); one more gets `LIMIT_EXCEEDED` 1008 for that
   * request, its `client_req_id` on a multiplexed socket, which goes on. Default 4. An integer.
   */
  sttDecodersPerSocket: number;
  /** Live requests of a heavy STT engine per API key, over all its sockets and POSTs; one more gets `LIMIT_EXCEEDED` 1008. Default 8. An integer. */
  sttDecodersPerKey: number;
  /**
   * Of `sttDecoders`, how many are kept for organizations holding none (issue 31: four keys took
   * them all): an organization already holding a decoder takes another only while more than this
   * many are free; past it `ENGINE_BUSY` (1011 for that request, POST 503). Default: a quarter of
   * `sttDecoders`, rounded down (32 → 8, 10 → 2, 2 → 0: a small server keeps none). An integer ≥ 0.
   */
  sttDecoderReserve: number;
  /**
   * pocketsphinx calls (decoding, utterance ends, model loads) running at once on libuv's thread
   * pool; the others wait, callers (organization, key, socket) served in turn, so one key's
   * streams cannot fill the pool ahead of another's request (issue 31). Per process. Default: the
   * machine's cores, from 1 to 3 (libuv's pool has 4 threads, shared with file I/O). An integer.
   */
  sttDecodeThreads: number;
  /**
   * Worker threads per sherpa-onnx model (`--tts sherpa-onnx`, `--stt sherpa-onnx`), each with its
   * own copy of the model (a Piper voice ~60–120 MB, Whisper small ~0.5 GB): synthesis and
   * recognition run there, never on the event loop. Default: the machine's cores, from 1 to 3
   * (sherpa-onnx's async calls use libuv's pool of 4 threads, shared with file I/O; 2 cores → 2).
   * An integer.
   */
  sherpaWorkers: number;
  /**
   * Jobs (a TTS sentence, an STT speech segment) that may wait for a sherpa-onnx worker, per model;
   * one more gets `ENGINE_BUSY`: WebSocket `error` 1011 for that request, POST 503. Default 64.
   * An integer.
   */
  sherpaQueue: number;
  /**
   * Streams one sherpa-onnx worker decodes at once for a streaming STT model (`nemo-ctc-online`):
   * a request's stream stays on one worker (sherpa-onnx keeps its state there), so the model
   * serves `sherpaWorkers × sherpaStreams` requests at once; one more is `ENGINE_BUSY`: WebSocket
   * `error` 1011 for that request, POST 503. Each stream holds its features and caches (a few MB
   * for a real model) until its request ends. Default 4. An integer.
   */
  sherpaStreams: number;
  /**
   * Bytes of uploads the server holds in memory at once (a `/v1/audio/transcriptions` file is held
   * whole while it is transcribed), counted as they arrive: a chunk that would pass it ends its
   * request with `ENGINE_BUSY` (503 on `/v1`). Per process (one server per process under
   * `serve`; each worker of `--workers` has its own). Default 256 MiB. An integer.
   */
  uploadBytes: number;
  /** Bytes of uploads one API key may hold in memory, of `uploadBytes`; past it `LIMIT_EXCEEDED` (429 on `/v1`). Default 100 MiB (two files at `maxAudioBytes`). An integer. */
  uploadBytesPerKey: number;
  /**
   * Live ffmpeg and ffprobe children (a `/v1` mp3/flac/aac answer, a non-WAV, non-Ogg-Opus
   * transcription file; ~50 MB of resident memory each while they work). One more is
   * `ENGINE_BUSY` (503 on `/v1`) before anything is spawned; a slot is given back when its child
   * has exited. Per process, as `uploadBytes`. Default 16. An integer.
   */
  ffmpegChildren: number;
  /** Live ffmpeg children of one API key, of `ffmpegChildren`; one more is `LIMIT_EXCEEDED` (429 on `/v1`). Default 4. An integer. */
  ffmpegChildrenPerKey: number;
  /**
   * How often this instance (each `--workers` worker is one) writes its heartbeat to the store,
   * with what its open holds delivered since the last (one write), and sweeps the holds of dead
   * instances, ms (src/server/open-holds.ts). A killed instance's sessions pay for what was
   * delivered up to its last heartbeat or hold growth. Default 2 000 (a write every 2 s per
   * instance, whatever its load; what a killed instance's session delivered in its last 2 s goes
   * unpaid). An integer.
   */
  instanceHeartbeatMs: number;
  /**
   * An instance whose heartbeat is older than this is dead: any instance's sweep settles its open
   * holds to what they had delivered and returns the rest, ms. At least twice
   * `instanceHeartbeatMs`; the instances' clocks must agree to well within it. Default 20 000.
   * An integer.
   */
  instanceTimeoutMs: number;
}

/** Credit rates (README "Server"). */
export interface CreditRates {
  /** Credits per character of TTS text synthesized. Default 1. */
  ttsPerChar: number;
  /** Credits per started second of STT audio transcribed. Default 1. */
  sttPerSecond: number;
}

/** The configuration of {@link createVoiceServer}. */
export interface ServerConfig {
  /** TTS engine name (src/engines/registry.ts). Default: the registry's best (`tone` until real engines). */
  tts: string;
  /** STT engine name. Default as `tts`. */
  stt: string;
  /** Forward unmatched requests to this core API (§4.13). Default: none (this process serves the core routes). */
  coreUrl: string | null;
  /** This server's region (residency, §4.13). Default null: no residency check. */
  region: string | null;
  /** Lifetime of temporary tokens (§4.6), seconds. Default 600. */
  tokenSeconds: number;
  /** Lifetime of voice-design candidates (§2.2), seconds. Default 3600. */
  candidateSeconds: number;
  /** The environment named by /statusz. Default `development`. */
  environment: string;
  /**
   * Load balancers whose `X-Forwarded-For` names the client (addresses or CIDR blocks:
   * `10.0.0.5`, `10.0.0.0/8`, `fd00::/8`); from anyone else the header is ignored. The client's
   * address is what `limits.connectionsPerAddress` counts (src/server/client-address.ts).
   * Default none: every connection is its peer's.
   */
  trustedProxies: readonly string[];
  limits: ServerLimits;
  rates: CreditRates;
}

export const DEFAULT_LIMITS: Readonly<ServerLimits> = Object.freeze({
  maxFrameBytes: 1 << 20,
  maxTextChars: 20_000,
  maxAudioBytes: 50 << 20,
  maxJsonBytes: 1 << 20,
  maxJsonDepth: 64,
  sessionSeconds: 300,
  pingSeconds: 25,
  idleSeconds: 60,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 10_000,
  connectionsPerAddress: 256,
  maxPingsPerSecond: 50,
  requestTimeoutMs: 120_000,
  connectionsPerKey: 50,
  authCacheSeconds: 5,
  engineTimeoutSeconds: 30,
  maxBufferedBytes: 16 << 20,
  upstreamTimeoutMs: 30_000,
  drainGraceSeconds: 30,
  sttDecoders: defaultSttDecoders(),
  sttDecodersPerSocket: 4,
  sttDecodersPerKey: 8,
  sttDecoderReserve: Math.floor(defaultSttDecoders() / 4),
  sttDecodeThreads: defaultNativeCalls(),
  sherpaWorkers: defaultSherpaWorkers(),
  sherpaQueue: DEFAULT_SHERPA_QUEUE,
  sherpaStreams: DEFAULT_SHERPA_STREAMS,
  uploadBytes: 256 << 20,
  uploadBytesPerKey: 100 << 20,
  ffmpegChildren: 16,
  ffmpegChildrenPerKey: 4,
  instanceHeartbeatMs: 2_000,
  instanceTimeoutMs: 20_000,
});

export const DEFAULT_RATES: Readonly<CreditRates> = Object.freeze({ ttsPerChar: 1, sttPerSecond: 1 });

/** A partial configuration, as callers give it. */
export type ServerConfigInput = Partial<Omit<ServerConfig, 'limits' | 'rates'>> & { limits?: Partial<ServerLimits>; rates?: Partial<CreditRates> };

function positive(name: string, v: unknown, max = Infinity): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new VoicewireError('INVALID_ARGUMENT', `server config: ${name} must be a positive number, got ${shown(v)}`);
  if (v > max) throw new VoicewireError('INVALID_ARGUMENT', `server config: ${name} must be at most ${max}, got ${v}`);
  return v;
}

/** setTimeout's longest delay, ms: a longer one fires after 1 ms (a session limit of 115 days cut every session at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A limit's upper bound: time limits are timers (`…Seconds`, `…Ms`); sizes and counts have none. */
function limitMax(key: string): number {
  if (key.endsWith('Seconds')) return MAX_TIMER_MS / 1000;
  if (key.endsWith('Ms')) return MAX_TIMER_MS;
  return Infinity;
}

/** Longest token or candidate lifetime, seconds (68 years). */
const MAX_EXPIRY_SECONDS = 2 ** 31 - 1;

/** node:http refuses a fractional headersTimeout/requestTimeout with a RangeError; counts are whole. */
const INTEGER_LIMITS: ReadonlySet<string> = new Set(['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxJsonDepth', 'maxConnections', 'connectionsPerAddress', 'instanceHeartbeatMs', 'instanceTimeoutMs']);

/** Limits that may be 0 (a count of places kept back: none). */
const ZERO_LIMITS: ReadonlySet<string> = new Set(['sttDecoderReserve', 'authCacheSeconds']);

/** Limits that count instances. */
const COUNT_LIMITS: ReadonlySet<string> = new Set(['sttDecoders', 'sttDecodersPerSocket', 'sttDecodersPerKey', 'sttDecoderReserve', 'sttDecodeThreads', 'sherpaWorkers', 'sherpaQueue', 'sherpaStreams', 'uploadBytes', 'uploadBytesPerKey', 'ffmpegChildren', 'ffmpegChildrenPerKey']);

/** `given` over `defaults`, refusing a key `defaults` does not have (a misspelt limit would be ignored). */
function withDefaults<T extends object>(what: string, defaults: Readonly<T>, given: Partial<T> | undefined): T {
  const partial = optionsArg(given, `server config: ${what}`);
  for (const k of Object.keys(partial)) {
    if (!Object.prototype.hasOwnProperty.call(defaults, k)) throw new VoicewireError('INVALID_ARGUMENT', `server config: unknown ${what} field ${JSON.stringify(k)}; known: ${Object.keys(defaults).join(', ')}`);
  }
  return { ...defaults, ...partial };
}

function text(name: string, v: unknown): string {
  if (typeof v !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `server config: ${name} must be a string, got ${describeValue(v)}`);
  return v;
}

/**
 * Resolves a configuration: defaults applied, every number checked.
 * @throws VoicewireError `INVALID_ARGUMENT` naming the bad field.
 */
export function resolveServerConfig(input: ServerConfigInput, engines: { tts: string; stt: string }): ServerConfig {
  input = optionsArg(input, 'resolveServerConfig: input');
  objectArg(engines, 'resolveServerConfig: engines');
  stringArg(engines.tts, 'resolveServerConfig: engines.tts');
  stringArg(engines.stt, 'resolveServerConfig: engines.stt');
  const limits = withDefaults('limits', DEFAULT_LIMITS, input.limits);
  // The reserve follows the decoders given, unless given itself.
  if (input.limits?.sttDecoderReserve === undefined && typeof limits.sttDecoders === 'number') limits.sttDecoderReserve = Math.floor(limits.sttDecoders / 4);
  for (const [k, v] of Object.entries(limits)) {
    if (ZERO_LIMITS.has(k) && v === 0) continue;
    positive(`limits.${k}`, v, limitMax(k));
    if (INTEGER_LIMITS.has(k) && !Number.isInteger(v)) throw new VoicewireError('INVALID_ARGUMENT', `server config: limits.${k} must be a whole number${k.endsWith('Ms') ? ' of ms' : ''}, got ${v}`);
    if (COUNT_LIMITS.has(k) && !Number.isInteger(v)) throw new VoicewireError('INVALID_ARGUMENT', `server config: limits.${k} must be a whole number, got ${v}`);
  }
  // A live instance must never look dead between two of its heartbeats.
  if (limits.instanceTimeoutMs < 2 * limits.instanceHeartbeatMs) {
    throw new VoicewireError('INVALID_ARGUMENT', `server config: limits.instanceTimeoutMs (${limits.instanceTimeoutMs}) must be at least twice limits.instanceHeartbeatMs (${limits.instanceHeartbeatMs})`);
  }
  const rates = withDefaults('rates', DEFAULT_RATES, input.rates);
  for (const [k, v] of Object.entries(rates)) if (typeof v !== 'number' || !(v >= 0)) throw new VoicewireError('INVALID_ARGUMENT', `server config: rates.${k} must be ≥ 0, got ${shown(v)}`);
  let coreUrl = input.coreUrl ?? null;
  if (coreUrl !== null) {
    try {
      const u = new URL(text('coreUrl', coreUrl));
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
      coreUrl = u.href.replace(/\/+$/, '');
    } catch {
      throw new VoicewireError('INVALID_ARGUMENT', `server config: coreUrl must be an http(s) URL, got ${typeof coreUrl === 'string' ? coreUrl : describeValue(coreUrl)}`);
    }
  }
  const region = input.region ?? null;
  const trustedProxies = input.trustedProxies ?? [];
  if (!Array.isArray(trustedProxies)) throw new VoicewireError('INVALID_ARGUMENT', `server config: trustedProxies must be an array of addresses or CIDR blocks, got ${describeValue(trustedProxies)}`);
  for (const p of trustedProxies as unknown[]) {
    try {
      parseProxyEntry(text('trustedProxies[]', p));
    } catch (err) {
      throw new VoicewireError('INVALID_ARGUMENT', `server config: ${(err as Error).message}`);
    }
  }
  return {
    tts: text('tts', input.tts ?? engines.tts),
    stt: text('stt', input.stt ?? engines.stt),
    coreUrl,
    region: region === null ? null : text('region', region),
    // Expiry dates must stay dates (now + 1e300 s is an Invalid Date, a RangeError per request).
    tokenSeconds: positive('tokenSeconds', input.tokenSeconds ?? 600, MAX_EXPIRY_SECONDS),
    candidateSeconds: positive('candidateSeconds', input.candidateSeconds ?? 3600, MAX_EXPIRY_SECONDS),
    environment: text('environment', input.environment ?? 'development'),
    trustedProxies: Object.freeze([...trustedProxies]),
    limits,
    rates,
  };
}
