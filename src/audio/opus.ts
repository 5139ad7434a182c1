/**
 * Opus (RFC 6716) encoder and decoder over a libopus backend (see `opus-backend.ts`): the wasm
 * build that `opusscript` ships (default, and in browsers; `opus-wasm.ts`), or a native libopus
 * binding that the Node entry registers when it is installed (`src/node/opus-native.ts`).
 *
 * What this layer adds over a backend, the same for both:
 * - a cap on live instances per process ({@link setOpusLimits} `maxInstances`, default
 *   {@link OPUS_DEFAULT_MAX_INSTANCES}): beyond it an encoder or decoder is refused with
 *   `OPUS_CAPACITY` (close code 1011: the server is full, the client did nothing wrong) before
 *   libopus is asked, so libopus never runs out of memory (issue: 25,000 wasm decoders filled the
 *   2 GiB heap and broke Opus for the whole process);
 * - a pool of released instances per shape, reset (`OPUS_RESET_STATE`) and reused, holding at
 *   most `poolHighWaterMark` idle instances in all (default {@link OPUS_DEFAULT_POOL_HIGH_WATER_MARK});
 *   above it a released instance is freed, giving its memory back;
 * - no crash escapes: a wasm trap or native exception becomes a `VoicewireError`
 *   (`OPUS_ENCODER_ERROR` / `OPUS_DECODER_ERROR`, close code 1011), and a failed creation
 *   `OPUS_CAPACITY`; the wasm backend then starts a fresh module for the next instance;
 * - `destroy()`, and a `FinalizationRegistry` that returns instances dropped without it.
 *
 * Loading: the wasm module loads synchronously the first time an encoder or decoder is made in
 * Node and web workers; in a browser's main thread call `await initOpus({ wasm })` first.
 */
import { describe } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { shown } from '../util/args.js';
import {
  OPUS_AUTO,
  OPUS_BITRATE_MAX,
  OPUS_GET_BITRATE,
  OPUS_GET_COMPLEXITY,
  OPUS_GET_GAIN,
  OPUS_GET_LOOKAHEAD,
  OPUS_RESET_STATE,
  OPUS_SET_BITRATE,
  OPUS_SET_COMPLEXITY,
  OPUS_SET_GAIN,
  opusErrorName,
  type OpusBackend,
  type OpusBackendDecoder,
  type OpusBackendEncoder,
  OPUS_APPLICATION_CODES,
  OPUS_SAMPLE_RATES,
} from './opus-backend.js';
import { wasmHandlerCount, wasmOpusBackend } from './opus-wasm.js';

export { initOpus, type OpusInitOptions, type OpusWasmSource } from './opus-wasm.js';
export type { OpusBackend, OpusBackendDecoder, OpusBackendEncoder } from './opus-backend.js';

export { OPUS_SAMPLE_RATES };
/** A sample rate libopus runs at. */
export type OpusSampleRate = (typeof OPUS_SAMPLE_RATES)[number];
/** libopus coding mode: `'voip'` (speech intelligibility), `'audio'` (fidelity), `'lowdelay'` (CELT only, 2.5 ms look-ahead). */
export type OpusApplication = keyof typeof OPUS_APPLICATION_CODES;
/** Largest Opus packet duration (RFC 6716 §3.2.5): 120 ms. */
export const OPUS_MAX_PACKET_MS = 120;
/** Packet durations an encoder can produce, in milliseconds. */
export const OPUS_FRAME_DURATIONS_MS = [2.5, 5, 10, 20, 40, 60, 80, 100, 120] as const;
/** A packet duration in milliseconds. */
export type OpusFrameDuration = (typeof OPUS_FRAME_DURATIONS_MS)[number];
/** Largest packet this wrapper accepts for decoding, in bytes (RFC 6716 allows 48 frames of 1275 bytes). */
export const OPUS_MAX_PACKET_BYTES = 65536;

/** 120 ms at 48 kHz. */
const MAX_FRAME = 5760;

// --- backend selection -----------------------------------------------------------------------------

let backend: OpusBackend | undefined;
let provider: (() => OpusBackend | undefined) | undefined;

/**
 * Registers where a better backend may come from (the Node entry registers the native libopus
 * binding). It is asked once, when the first encoder or decoder is made after registration; when
 * it returns undefined (not installed), the wasm backend is used.
 */
export function setOpusBackendProvider(find: (() => OpusBackend | undefined) | undefined): void {
  if (find !== undefined && typeof find !== 'function') throw new VoicewireError('INVALID_ARGUMENT', `setOpusBackendProvider takes a function, got ${describe(find)}`);
  provider = find;
  backend = undefined;
}

/**
 * Chooses the backend for encoders and decoders made from now on: `'wasm'` (opusscript's
 * libopus), a backend object, or undefined to choose again (the registered provider, else wasm).
 * Instances already made keep theirs. The instance cap counts both.
 */
export function setOpusBackend(choice: OpusBackend | 'wasm' | undefined): void {
  if (choice === 'wasm') backend = wasmOpusBackend;
  else if (choice === undefined) backend = undefined;
  else if (typeof choice === 'object' && choice !== null && typeof choice.createEncoder === 'function' && typeof choice.createDecoder === 'function') backend = choice;
  else throw new VoicewireError('INVALID_ARGUMENT', `setOpusBackend takes 'wasm', a backend object or undefined, got ${describe(choice)}`);
}

/**
 * The backend new encoders and decoders get (resolving the provider on first use). Not exported:
 * a backend trusts its caller's checks and the instance cap (OpusEncoder/OpusDecoder do both).
 */
function opusBackend(): OpusBackend {
  if (backend) return backend;
  let found: OpusBackend | undefined;
  try {
    found = provider?.();
  } catch {
    found = undefined; // a broken optional install falls back to wasm
  }
  backend = found ?? wasmOpusBackend;
  return backend;
}

// --- limits and the pool ---------------------------------------------------------------------------

/** Default of {@link OpusLimits.maxInstances}. */
export const OPUS_DEFAULT_MAX_INSTANCES = 4096;
/** Default of {@link OpusLimits.poolHighWaterMark}. */
export const OPUS_DEFAULT_POOL_HIGH_WATER_MARK = 256;

/** Process-wide Opus limits (see {@link setOpusLimits}). */
export interface OpusLimits {
  /**
   * Most live encoders + decoders in the process (both backends together). Default 4096: each
   * costs 20–90 KB (wasm: up to ~180 KB per encoder+decoder handler at 48 kHz stereo), so the
   * wasm heap stays far below its 2 GiB ceiling. Beyond it, creation raises `OPUS_CAPACITY`.
   */
  readonly maxInstances: number;
  /** Most released instances kept for reuse, all shapes together. Default 256; above it they are freed. */
  readonly poolHighWaterMark: number;
}

let limits: OpusLimits = { maxInstances: OPUS_DEFAULT_MAX_INSTANCES, poolHighWaterMark: OPUS_DEFAULT_POOL_HIGH_WATER_MARK };

/** Sets the process-wide Opus limits (fields left out keep their value); returns the limits now in force. */
export function setOpusLimits(next: Partial<OpusLimits> = {}): OpusLimits {
  if (typeof next !== 'object' || next === null) throw new VoicewireError('INVALID_ARGUMENT', `setOpusLimits takes an object, got ${describe(next)}`);
  const max = next.maxInstances ?? limits.maxInstances;
  const hwm = next.poolHighWaterMark ?? limits.poolHighWaterMark;
  if (!Number.isInteger(max) || max < 0) throw new VoicewireError('INVALID_ARGUMENT', `maxInstances must be a non-negative integer, got ${shown(max)}`);
  if (!Number.isInteger(hwm) || hwm < 0) throw new VoicewireError('INVALID_ARGUMENT', `poolHighWaterMark must be a non-negative integer, got ${shown(hwm)}`);
  limits = { maxInstances: max, poolHighWaterMark: hwm };
  trimPool();
  return limits;
}

interface PooledEncoder {
  readonly backend: OpusBackend;
  readonly core: OpusBackendEncoder;
  readonly key: string;
  readonly lookahead: number;
  readonly defaultComplexity: number;
}
interface PooledDecoder {
  readonly backend: OpusBackend;
  readonly core: OpusBackendDecoder;
  readonly key: string;
}

const encoderPool = new Map<string, PooledEncoder[]>();
const decoderPool = new Map<string, PooledDecoder[]>();
/** Idle instances in both pools. */
let pooled = 0;
let liveEncoders = 0;
let liveDecoders = 0;
let finalized = 0;
let refused = 0;

function listOf<T>(pools: Map<string, T[]>, key: string): T[] {
  let list = pools.get(key);
  if (!list) {
    list = [];
    pools.set(key, list);
  }
  return list;
}

/** Frees idle instances until the pool is at its high-water mark (oldest shapes first). */
function trimPool(): void {
  for (const pools of [encoderPool, decoderPool] as Map<string, (PooledEncoder | PooledDecoder)[]>[]) {
    for (const list of pools.values()) {
      while (pooled > limits.poolHighWaterMark && list.length > 0) {
        freeQuietly(list.shift()!.core);
        pooled--;
      }
    }
  }
}

function freeQuietly(core: { free(): void }): void {
  try {
    core.free();
  } catch {
    // A backend that already failed has nothing left to give back.
  }
}

/** Wraps anything a backend throws that is not a VoicewireError (a wasm trap, a native exception). */
function crashed(err: unknown, code: 'OPUS_ENCODER_ERROR' | 'OPUS_DECODER_ERROR' | 'OPUS_CAPACITY', what: string): VoicewireError {
  if (err instanceof VoicewireError) return err;
  const reason = err instanceof Error ? `${err.name}: ${err.message}` : shown(err);
  return new VoicewireError(code, `libopus failed in ${what} (${reason}); later requests get a fresh instance`, { cause: err, closeCode: 1011 });
}

function checkCapacity(what: string): void {
  if (liveEncoders + liveDecoders >= limits.maxInstances) {
    refused++;
    throw new VoicewireError('OPUS_CAPACITY', `${what}: the process already holds ${liveEncoders + liveDecoders} Opus instances, its limit (setOpusLimits maxInstances = ${limits.maxInstances}); try again later`, {
      details: { live: liveEncoders + liveDecoders, maxInstances: limits.maxInstances },
    });
  }
}

/** An idle instance of this shape that still answers (its backend may have failed since it was pooled). */
function takeIdle<T extends PooledEncoder | PooledDecoder>(pools: Map<string, T[]>, key: string): T | undefined {
  const list = pools.get(key);
  while (list && list.length > 0) {
    const item = list.pop()!;
    pooled--;
    try {
      item.core.get('lookahead' in item ? OPUS_GET_LOOKAHEAD : OPUS_GET_GAIN);
      return item;
    } catch {
      freeQuietly(item.core);
    }
  }
  return undefined;
}

function acquireEncoder(sampleRate: number, channels: 1 | 2, application: OpusApplication): PooledEncoder {
  checkCapacity('OpusEncoder');
  const b = opusBackend();
  const key = `${b.name}/${sampleRate}/${channels}/${application}`;
  const idle = takeIdle(encoderPool, key);
  if (idle) return idle;
  let core: OpusBackendEncoder;
  try {
    core = b.createEncoder(sampleRate, channels, OPUS_APPLICATION_CODES[application]);
  } catch (err) {
    throw crashed(err, 'OPUS_CAPACITY', `creating an encoder (${sampleRate} Hz, ${channels} ch)`);
  }
  try {
    return { backend: b, core, key, lookahead: core.get(OPUS_GET_LOOKAHEAD), defaultComplexity: core.get(OPUS_GET_COMPLEXITY) };
  } catch (err) {
    freeQuietly(core);
    throw crashed(err, 'OPUS_ENCODER_ERROR', 'a new encoder');
  }
}

function acquireDecoder(sampleRate: number, channels: 1 | 2): PooledDecoder {
  checkCapacity('OpusDecoder');
  const b = opusBackend();
  const key = `${b.name}/${sampleRate}/${channels}`;
  const idle = takeIdle(decoderPool, key);
  if (idle) return idle;
  try {
    return { backend: b, core: b.createDecoder(sampleRate, channels), key };
  } catch (err) {
    throw crashed(err, 'OPUS_CAPACITY', `creating a decoder (${sampleRate} Hz, ${channels} ch)`);
  }
}

function releaseEncoder(e: PooledEncoder, healthy: boolean): void {
  if (!healthy || pooled >= limits.poolHighWaterMark) return freeQuietly(e.core);
  try {
    // Back to the state of a new encoder: no audio history, default settings.
    if (e.core.set(OPUS_RESET_STATE, 0) < 0 || e.core.set(OPUS_SET_BITRATE, OPUS_AUTO) < 0 || e.core.set(OPUS_SET_COMPLEXITY, e.defaultComplexity) < 0) return freeQuietly(e.core);
  } catch {
    return freeQuietly(e.core);
  }
  listOf(encoderPool, e.key).push(e);
  pooled++;
}

function releaseDecoder(d: PooledDecoder, healthy: boolean): void {
  if (!healthy || pooled >= limits.poolHighWaterMark) return freeQuietly(d.core);
  try {
    if (d.core.set(OPUS_RESET_STATE, 0) < 0 || d.core.set(OPUS_SET_GAIN, 0) < 0) return freeQuietly(d.core);
  } catch {
    return freeQuietly(d.core);
  }
  listOf(decoderPool, d.key).push(d);
  pooled++;
}

/** A lease on one backend instance; the FinalizationRegistry holds it, never the OpusEncoder/OpusDecoder. */
class Lease<T extends PooledEncoder | PooledDecoder> {
  item: T | undefined;
  /** A crash happened in this instance: free it rather than pool it. */
  healthy = true;
  constructor(
    item: T,
    readonly encoder: boolean,
  ) {
    this.item = item;
    if (encoder) liveEncoders++;
    else liveDecoders++;
  }

  release(): void {
    const item = this.item;
    if (!item) return;
    this.item = undefined;
    if (this.encoder) {
      liveEncoders--;
      releaseEncoder(item as PooledEncoder, this.healthy);
    } else {
      liveDecoders--;
      releaseDecoder(item as PooledDecoder, this.healthy);
    }
  }
}

const registry =
  typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry<Lease<PooledEncoder | PooledDecoder>>((lease) => {
        if (!lease.item) return;
        finalized++;
        lease.release();
      })
    : undefined;

/** Live-instance and memory figures of the Opus layer. */
export interface OpusStats {
  /** Encoders created and not yet destroyed (or collected). */
  readonly encoders: number;
  /** Decoders created and not yet destroyed (or collected). */
  readonly decoders: number;
  /** Released instances kept for reuse (at most `poolHighWaterMark`). */
  readonly pooled: number;
  /** Native wasm handlers allocated (each is one encoder + one decoder; freed when both halves are). */
  readonly handlers: number;
  /** Instances returned by the FinalizationRegistry because `destroy()` was not called. */
  readonly finalized: number;
  /** Creations refused with `OPUS_CAPACITY` by the instance cap. */
  readonly refused: number;
  /** Size of the wasm heap in bytes (0 before the module is loaded). */
  readonly heapBytes: number;
  /** Name of the backend new instances get (`'wasm'` or `'native'`). */
  readonly backend: string;
}

/** Live-instance counts, pool size and wasm heap size. */
export function opusStats(): OpusStats {
  return {
    encoders: liveEncoders,
    decoders: liveDecoders,
    pooled,
    handlers: wasmHandlerCount(),
    finalized,
    refused,
    heapBytes: wasmOpusBackend.memoryBytes?.() ?? 0,
    backend: backend?.name ?? (provider ? 'undecided' : 'wasm'),
  };
}

// --- packets ---------------------------------------------------------------------------------------

/** Frame size in 48 kHz samples by TOC configuration number (RFC 6716 §3.1, Table 2). */
const FRAME_SIZE_48K = new Uint16Array(32);
for (let c = 0; c < 32; c++) {
  FRAME_SIZE_48K[c] = c < 12 ? [480, 960, 1920, 2880][c & 3]! : c < 16 ? [480, 960][c & 1]! : [120, 240, 480, 960][c & 3]!;
}

/**
 * Samples per channel an Opus packet decodes to at `sampleRate` (default 48000), from its TOC
 * byte and frame count (RFC 6716 §3.1–3.2).
 * @throws VoicewireError `OPUS_INVALID_PACKET` for an empty packet, a code-3 packet without its
 * frame-count byte or with 0 frames, or a duration over 120 ms (§3.2.5, [R5]).
 */
export function opusPacketDuration(packet: Uint8Array, sampleRate: number = 48000): number {
  if (!(packet instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `opusPacketDuration takes a Uint8Array packet, got ${describe(packet)}`);
  if (typeof sampleRate !== 'number' || !(sampleRate > 0) || sampleRate === Infinity) throw new VoicewireError('INVALID_ARGUMENT', `opusPacketDuration sampleRate must be a positive number, got ${shown(sampleRate)}`);
  if (packet.length === 0) throw new VoicewireError('OPUS_INVALID_PACKET', 'an Opus packet has at least one byte (RFC 6716 §3.4 [R1])');
  const toc = packet[0]!;
  const frame = FRAME_SIZE_48K[toc >> 3]!;
  const code = toc & 3;
  let frames: number;
  if (code === 0) frames = 1;
  else if (code !== 3) frames = 2;
  else {
    if (packet.length < 2) throw new VoicewireError('OPUS_INVALID_PACKET', 'a code-3 Opus packet needs its frame count byte (RFC 6716 §3.2.5 [R6])');
    frames = packet[1]! & 0x3f;
    if (frames === 0) throw new VoicewireError('OPUS_INVALID_PACKET', 'a code-3 Opus packet has 0 frames (RFC 6716 §3.2.5 [R5])');
  }
  const total = frames * frame;
  if (total > MAX_FRAME) throw new VoicewireError('OPUS_INVALID_PACKET', `an Opus packet lasts ${total / 48} ms, more than 120 ms (RFC 6716 §3.2.5 [R5])`);
  return (total * sampleRate) / 48000;
}

function checkRate(rate: unknown, what: string): OpusSampleRate {
  if (!OPUS_SAMPLE_RATES.includes(rate as OpusSampleRate)) throw new VoicewireError('INVALID_ARGUMENT', `${what} sampleRate must be one of ${OPUS_SAMPLE_RATES.join(', ')}, got ${shown(rate)}`);
  return rate as OpusSampleRate;
}

function checkChannels(channels: unknown, what: string): 1 | 2 {
  if (channels !== 1 && channels !== 2) throw new VoicewireError('INVALID_ARGUMENT', `${what} channels must be 1 or 2, got ${shown(channels)}`);
  return channels;
}

// --- encoder ---------------------------------------------------------------------------------------

/** Options of {@link OpusEncoder}. */
export interface OpusEncoderOptions {
  /** Input sample rate. Default 48000. */
  sampleRate?: OpusSampleRate;
  /** 1 (default) or 2, interleaved. */
  channels?: 1 | 2;
  /** Coding mode. Default `'audio'`. */
  application?: OpusApplication;
  /** Target bitrate in bit/s (500–512000), `'auto'` (default; libopus picks by rate and channels) or `'max'`. */
  bitrate?: number | 'auto' | 'max';
  /** Encoder complexity 0–10. Default libopus's (9 in this build). */
  complexity?: number;
}

/**
 * A libopus encoder (RFC 6716). {@link encode} takes exactly one frame of 2.5, 5, 10, 20, 40, 60,
 * 80, 100 or 120 ms (interleaved when stereo) and returns one packet. Call {@link destroy} when
 * done; an encoder dropped without it is reclaimed by a FinalizationRegistry.
 * @throws `OPUS_CAPACITY` (1011) when the process holds `maxInstances` instances ({@link setOpusLimits}).
 */
export class OpusEncoder {
  /** Input sample rate. */
  readonly sampleRate: OpusSampleRate;
  /** Channel count. */
  readonly channels: 1 | 2;
  /** Coding mode. */
  readonly application: OpusApplication;
  /**
   * The encoder's look-ahead (`OPUS_GET_LOOKAHEAD`) in samples at {@link sampleRate}: 312 at
   * 48 kHz for `voip`/`audio` (6.5 ms), 120 for `lowdelay` (2.5 ms). An Ogg Opus stream's pre-skip.
   */
  readonly lookahead: number;
  /** The backend this encoder runs on (`'wasm'` or `'native'`). */
  readonly backend: string;
  private lease: Lease<PooledEncoder>;

  constructor(options: OpusEncoderOptions = {}) {
    const o = checkOptions(options, 'OpusEncoder');
    this.sampleRate = checkRate(o.sampleRate ?? 48000, 'OpusEncoder');
    this.channels = checkChannels(o.channels ?? 1, 'OpusEncoder');
    const app = o.application ?? 'audio';
    if (typeof app !== 'string' || !Object.hasOwn(OPUS_APPLICATION_CODES, app)) throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder application must be 'voip', 'audio' or 'lowdelay', got ${shown(app)}`);
    this.application = app;
    if (o.bitrate !== undefined) bitrateValue(o.bitrate);
    if (o.complexity !== undefined) checkComplexity(o.complexity);
    const item = acquireEncoder(this.sampleRate, this.channels, app);
    this.lease = new Lease(item, true);
    registry?.register(this, this.lease, this);
    this.lookahead = item.lookahead;
    this.backend = item.backend.name;
    try {
      if (o.bitrate !== undefined) this.setBitrate(o.bitrate);
      if (o.complexity !== undefined) this.setComplexity(o.complexity);
    } catch (err) {
      this.destroy();
      throw err;
    }
  }

  /** True once {@link destroy} was called. */
  get destroyed(): boolean {
    return this.lease.item === undefined;
  }

  /** Sets the target bitrate (`OPUS_SET_BITRATE`): bit/s 500–512000, `'auto'` or `'max'`. */
  setBitrate(bitrate: number | 'auto' | 'max'): void {
    this.ctl(OPUS_SET_BITRATE, bitrateValue(bitrate));
  }

  /** The bitrate libopus is using, bit/s (`OPUS_GET_BITRATE`; resolves `'auto'`). */
  getBitrate(): number {
    return this.get(OPUS_GET_BITRATE);
  }

  /** Sets the complexity 0–10 (`OPUS_SET_COMPLEXITY`). */
  setComplexity(complexity: number): void {
    this.ctl(OPUS_SET_COMPLEXITY, checkComplexity(complexity));
  }

  /** The complexity in use. */
  getComplexity(): number {
    return this.get(OPUS_GET_COMPLEXITY);
  }

  /**
   * Encodes one frame: `pcm.length / channels` samples per channel must be a valid Opus frame size
   * (2.5–120 ms). Int16 samples are used as they are; Float32 samples (nominal ±1) are scaled by
   * 32767, rounded and clamped (NaN → 0). Returns a new packet.
   */
  encode(pcm: Int16Array | Float32Array): Uint8Array {
    return this.run(pcm).slice();
  }

  /** Like {@link encode}, writing the packet into `out` at `offset` (an integer, default 0); returns its length. */
  encodeInto(pcm: Int16Array | Float32Array, out: Uint8Array, offset = 0): number {
    if (!(out instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder.encodeInto writes into a Uint8Array, got ${describe(out)}`);
    checkOffset(offset, 'OpusEncoder.encodeInto');
    const packet = this.run(pcm);
    const len = packet.length;
    if (offset + len > out.length) throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder.encodeInto: ${len} bytes do not fit at offset ${offset} of ${out.length}`);
    out.set(packet, offset);
    return len;
  }

  /** Clears the encoder's history (`OPUS_RESET_STATE`), keeping its settings. */
  reset(): void {
    this.ctl(OPUS_RESET_STATE, 0);
  }

  /** Returns the encoder to the pool (or frees it above the high-water mark). Idempotent; any later call raises `INVALID_STATE`. */
  destroy(): void {
    if (!this.lease.item) return;
    registry?.unregister(this);
    this.lease.release();
  }

  private core(): OpusBackendEncoder {
    const item = this.lease.item;
    if (!item) throw new VoicewireError('INVALID_STATE', 'OpusEncoder used after destroy()');
    return item.core;
  }

  /** Validates and encodes; the packet is a backend view, valid until the next backend call. */
  private run(pcm: Int16Array | Float32Array): Uint8Array {
    const core = this.core();
    if (!(pcm instanceof Int16Array || pcm instanceof Float32Array)) throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder.encode takes an Int16Array or Float32Array, got ${describe(pcm)}`);
    const frame = pcm.length / this.channels;
    if (!isFrameSize(frame, this.sampleRate)) {
      throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder.encode: ${frame} samples per channel is not an Opus frame at ${this.sampleRate} Hz (2.5, 5, 10, 20, 40, 60, 80, 100 or 120 ms)`);
    }
    try {
      return core.encode(pcm, frame);
    } catch (err) {
      throw this.crash(err, 'opus_encode');
    }
  }

  private crash(err: unknown, what: string): VoicewireError {
    if (!(err instanceof VoicewireError)) this.lease.healthy = false;
    return crashed(err, 'OPUS_ENCODER_ERROR', what);
  }

  private ctl(request: number, value: number): void {
    const core = this.core();
    let rc: number;
    try {
      rc = core.set(request, value);
    } catch (err) {
      throw this.crash(err, `encoder_ctl(${request})`);
    }
    if (rc < 0) throw new VoicewireError('OPUS_ENCODER_ERROR', `libopus encoder_ctl(${request}, ${value}): ${opusErrorName(rc)}`);
  }

  private get(request: number): number {
    const core = this.core();
    try {
      return core.get(request);
    } catch (err) {
      throw this.crash(err, `encoder_ctl(${request})`);
    }
  }
}

function checkOptions<T extends object>(options: T | null | undefined, what: string): T {
  if (options === undefined || options === null) return {} as T;
  if (typeof options !== 'object') throw new VoicewireError('INVALID_ARGUMENT', `${what} options must be an object, got ${describe(options)}`);
  return options;
}

function checkOffset(offset: unknown, what: string): number {
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) throw new VoicewireError('INVALID_ARGUMENT', `${what}: offset must be a non-negative integer, got ${shown(offset)}`);
  return offset;
}

function bitrateValue(bitrate: unknown): number {
  if (bitrate === 'auto') return OPUS_AUTO;
  if (bitrate === 'max') return OPUS_BITRATE_MAX;
  if (typeof bitrate === 'number' && Number.isInteger(bitrate) && bitrate >= 500 && bitrate <= 512000) return bitrate;
  throw new VoicewireError('INVALID_ARGUMENT', `Opus bitrate must be an integer 500–512000, 'auto' or 'max', got ${shown(bitrate)}`);
}

function checkComplexity(complexity: unknown): number {
  if (typeof complexity !== 'number' || !Number.isInteger(complexity) || complexity < 0 || complexity > 10) throw new VoicewireError('INVALID_ARGUMENT', `Opus complexity must be an integer 0–10, got ${shown(complexity)}`);
  return complexity;
}

function isFrameSize(frame: number, rate: number): boolean {
  // 2.5 ms multiples that RFC 6716 and libopus allow: 1, 2, 4, 8, 16, 24, 32, 40, 48 × 2.5 ms.
  const unit = rate / 400;
  const k = frame / unit;
  return k === 1 || k === 2 || k === 4 || k === 8 || k === 16 || k === 24 || k === 32 || k === 40 || k === 48;
}

// --- decoder ---------------------------------------------------------------------------------------

/** Options of {@link OpusDecoder}. */
export interface OpusDecoderOptions {
  /** Output sample rate (libopus decodes natively at any of these). Default 48000. */
  sampleRate?: OpusSampleRate;
  /** Output channels, 1 (default) or 2: libopus downmixes a stereo stream or duplicates a mono one. */
  channels?: 1 | 2;
  /** Gain applied inside libopus before 16-bit conversion, Q7.8 dB (`OPUS_SET_GAIN`). Default 0. */
  gain?: number;
}

/**
 * A libopus decoder. {@link decode} takes one packet of any duration (2.5–120 ms; packets longer
 * than 60 ms are decoded whole) and returns interleaved 16-bit PCM. Call {@link destroy} when
 * done; a decoder dropped without it is reclaimed by a FinalizationRegistry.
 * @throws `OPUS_CAPACITY` (1011) when the process holds `maxInstances` instances ({@link setOpusLimits}).
 */
export class OpusDecoder {
  /** Output sample rate. */
  readonly sampleRate: OpusSampleRate;
  /** Output channels. */
  readonly channels: 1 | 2;
  /** The backend this decoder runs on (`'wasm'` or `'native'`). */
  readonly backend: string;
  private lease: Lease<PooledDecoder>;

  constructor(options: OpusDecoderOptions = {}) {
    const o = checkOptions(options, 'OpusDecoder');
    this.sampleRate = checkRate(o.sampleRate ?? 48000, 'OpusDecoder');
    this.channels = checkChannels(o.channels ?? 1, 'OpusDecoder');
    if (o.gain !== undefined) checkGain(o.gain);
    const item = acquireDecoder(this.sampleRate, this.channels);
    this.lease = new Lease(item, false);
    this.backend = item.backend.name;
    registry?.register(this, this.lease, this);
    if (o.gain !== undefined) {
      try {
        this.setGain(o.gain);
      } catch (err) {
        this.destroy();
        throw err;
      }
    }
  }

  /** True once {@link destroy} was called. */
  get destroyed(): boolean {
    return this.lease.item === undefined;
  }

  /** Sets the output gain, Q7.8 dB (-32768..32767; RFC 7845 §5.1 "Output Gain"). */
  setGain(q78: number): void {
    checkGain(q78);
    const core = this.core();
    let rc: number;
    try {
      rc = core.set(OPUS_SET_GAIN, q78);
    } catch (err) {
      throw this.crash(err, 'decoder_ctl(OPUS_SET_GAIN)');
    }
    if (rc < 0) throw new VoicewireError('OPUS_DECODER_ERROR', `libopus decoder_ctl(OPUS_SET_GAIN): ${opusErrorName(rc)}`);
  }

  /** The output gain in use, Q7.8 dB. */
  getGain(): number {
    const core = this.core();
    try {
      return core.get(OPUS_GET_GAIN);
    } catch (err) {
      throw this.crash(err, 'decoder_ctl(OPUS_GET_GAIN)');
    }
  }

  /** Decodes one packet into a new interleaved Int16Array. */
  decode(packet: Uint8Array): Int16Array {
    const core = this.core();
    const out = new Int16Array(this.check(packet) * this.channels);
    this.run(core, packet, out, 0);
    return out;
  }

  /** Decodes one packet into a new interleaved Float32Array (16-bit samples / 32768). */
  decodeFloat(packet: Uint8Array): Float32Array {
    const core = this.core();
    const out = new Float32Array(this.check(packet) * this.channels);
    this.run(core, packet, out, 0);
    return out;
  }

  /**
   * Decodes one packet into `out` starting at element `offset` (a non-negative integer, default
   * 0; interleaved). Returns the samples per channel written. `out` must have room for the
   * packet's duration ({@link opusPacketDuration} × channels).
   * @throws `OPUS_INVALID_PACKET` for a malformed packet, `INVALID_ARGUMENT` for a bad `out` or `offset`.
   */
  decodeInto(packet: Uint8Array, out: Int16Array | Float32Array, offset = 0): number {
    const core = this.core();
    if (!(out instanceof Int16Array || out instanceof Float32Array)) throw new VoicewireError('INVALID_ARGUMENT', `OpusDecoder.decodeInto writes into an Int16Array or Float32Array, got ${describe(out)}`);
    checkOffset(offset, 'OpusDecoder.decodeInto');
    const values = this.check(packet) * this.channels;
    if (offset + values > out.length) throw new VoicewireError('INVALID_ARGUMENT', `OpusDecoder.decodeInto: ${values} samples do not fit at offset ${offset} of ${out.length}`);
    return this.run(core, packet, out, offset);
  }

  /** Validates a packet; returns its duration in samples per channel at the output rate. */
  private check(packet: Uint8Array): number {
    if (!(packet instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `OpusDecoder.decode takes a Uint8Array packet, got ${describe(packet)}`);
    if (packet.length > OPUS_MAX_PACKET_BYTES) throw new VoicewireError('OPUS_INVALID_PACKET', `an Opus packet of ${packet.length} bytes exceeds ${OPUS_MAX_PACKET_BYTES}`);
    return opusPacketDuration(packet, this.sampleRate);
  }

  private run(core: OpusBackendDecoder, packet: Uint8Array, out: Int16Array | Float32Array, offset: number): number {
    try {
      return core.decode(packet, out, offset);
    } catch (err) {
      throw this.crash(err, 'opus_decode');
    }
  }

  private crash(err: unknown, what: string): VoicewireError {
    if (!(err instanceof VoicewireError)) this.lease.healthy = false;
    return crashed(err, 'OPUS_DECODER_ERROR', what);
  }

  /** Clears the decoder's history (`OPUS_RESET_STATE`), keeping the gain. */
  reset(): void {
    const core = this.core();
    try {
      core.set(OPUS_RESET_STATE, 0);
    } catch (err) {
      throw this.crash(err, 'decoder_ctl(OPUS_RESET_STATE)');
    }
  }

  /** Returns the decoder to the pool (or frees it above the high-water mark). Idempotent; any later call raises `INVALID_STATE`. */
  destroy(): void {
    if (!this.lease.item) return;
    registry?.unregister(this);
    this.lease.release();
  }

  private core(): OpusBackendDecoder {
    const item = this.lease.item;
    if (!item) throw new VoicewireError('INVALID_STATE', 'OpusDecoder used after destroy()');
    return item.core;
  }
}

function checkGain(q78: unknown): number {
  if (typeof q78 !== 'number' || !Number.isInteger(q78) || q78 < -32768 || q78 > 32767) throw new VoicewireError('INVALID_ARGUMENT', `Opus gain must be a Q7.8 integer in -32768..32767, got ${shown(q78)}`);
  return q78;
}

/**
 * The libopus version of this build. opusscript 0.1.1 declares libopus 1.4; the wasm links no
 * `opus_get_version_string`, so the version is not readable from it. Probed in
 * `test/audio/opus.test.ts`: the build accepts `OPUS_SET_INBAND_FEC(2)` (new in 1.4; 1.3 rejects it) and
 * answers `OPUS_UNIMPLEMENTED` to 1.5's requests (`OPUS_SET_DRED_DURATION`, and
 * `OPUS_SET_COMPLEXITY` on a decoder).
 */
export const OPUS_LIBRARY_VERSION = 'libopus 1.4 (opusscript 0.1.1 wasm)';
