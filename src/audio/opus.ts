/**
 * Opus (RFC 6716) encoder and decoder over the libopus build that `opusscript` ships
 * (`opusscript/build/opusscript_native_wasm.js`, libopus 1.4), driven through its raw emscripten
 * module instead of opusscript's JavaScript wrapper.
 *
 * Why not the wrapper: all its instances share one wasm heap, its PCM views use a byte address as
 * a 16-bit index (so the 80th instance's views fall outside the heap), and when the heap grows
 * every view it holds is detached ("detached ArrayBuffer"); it also truncates decoded packets
 * longer than 60 ms and cannot encode frames of 80 ms or more. This wrapper:
 * - loads ONE module instance and reads `HEAPU8`/`HEAPU32` afresh on every call, so heap growth
 *   never leaves a stale view behind;
 * - copies PCM and packets through one scratch area allocated once (calls are synchronous and
 *   never re-entrant, so instances need no buffers of their own);
 * - pools the native `OpusScriptHandler` objects: each holds one libopus encoder AND one decoder,
 *   so an {@link OpusEncoder} and an {@link OpusDecoder} share a handler (half the memory of one
 *   handler each), and a released half is reset (`OPUS_RESET_STATE`) and reused instead of being
 *   freed and re-allocated. Memory is bounded by the peak number of live instances (~85 KB per
 *   handler at 48 kHz mono);
 * - frees explicitly with `destroy()`, and returns instances that were dropped without it to the
 *   pool through a `FinalizationRegistry`.
 *
 * The handler's entry points (the only ones the build exports besides malloc/free and
 * opus_strerror) exchange PCM in an odd layout: every 16-bit sample travels as two 16-bit words,
 * low byte then high byte (a quirk of opusscript's C++ glue). We read and write that layout as one
 * 32-bit word per sample: `lo | hi << 16`.
 *
 * Loading: in Node (and in web workers) the module loads synchronously the first time an encoder
 * or decoder is made. In a browser's main thread call `await initOpus({ wasm })` first with the
 * `.wasm` file's URL or bytes. Importing this file loads nothing.
 */
import createOpusscriptModule from 'opusscript/build/opusscript_native_wasm.js';
import { describe } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';

// --- the native module ---------------------------------------------------------------------------

interface NativeHandler {
  _encode(pcmPtr: number, values: number, packetPtr: number, frameSize: number): number;
  _decode(packetPtr: number, length: number, pcmPtr: number): number;
  _encoder_ctl(request: number, arg: number): number;
  _decoder_ctl(request: number, arg: number): number;
}

interface NativeModule {
  HEAPU8: Uint8Array;
  HEAP32: Int32Array;
  HEAPU32: Uint32Array;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  _opus_strerror(code: number): number;
  OpusScriptHandler: {
    new (sampleRate: number, channels: number, application: number): NativeHandler;
    destroy_handler(handler: NativeHandler): void;
  };
  ready?: Promise<unknown>;
}

// libopus request codes (opus_defines.h).
const OPUS_SET_BITRATE = 4002;
const OPUS_GET_BITRATE = 4003;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_GET_COMPLEXITY = 4011;
const OPUS_GET_LOOKAHEAD = 4027;
const OPUS_RESET_STATE = 4028;
const OPUS_SET_GAIN = 4034;
const OPUS_GET_GAIN = 4045;
const OPUS_AUTO = -1000;
const OPUS_BITRATE_MAX = -1;
const OPUS_INVALID_PACKET = -4;

/** libopus application codes by name. */
const APPLICATIONS = { voip: 2048, audio: 2049, lowdelay: 2051 } as const;

/** The sample rates libopus encodes and decodes at. */
export const OPUS_SAMPLE_RATES = [8000, 12000, 16000, 24000, 48000] as const;
/** A sample rate libopus runs at. */
export type OpusSampleRate = (typeof OPUS_SAMPLE_RATES)[number];
/** libopus coding mode: `'voip'` (speech intelligibility), `'audio'` (fidelity), `'lowdelay'` (CELT only, 2.5 ms look-ahead). */
export type OpusApplication = keyof typeof APPLICATIONS;
/** Largest Opus packet duration (RFC 6716 §3.2.5): 120 ms. */
export const OPUS_MAX_PACKET_MS = 120;
/** Packet durations an encoder can produce, in milliseconds. */
export const OPUS_FRAME_DURATIONS_MS = [2.5, 5, 10, 20, 40, 60, 80, 100, 120] as const;
/** A packet duration in milliseconds. */
export type OpusFrameDuration = (typeof OPUS_FRAME_DURATIONS_MS)[number];
/** Largest packet this wrapper accepts for decoding, in bytes (RFC 6716 allows 48 frames of 1275 bytes). */
export const OPUS_MAX_PACKET_BYTES = 65536;

/** Largest packet libopus writes (opusscript passes 3 × 1276 as the limit). */
const MAX_ENCODED_BYTES = 1276 * 3;
/** 120 ms at 48 kHz. */
const MAX_FRAME = 5760;
/** PCM scratch: 120 ms × 2 channels × 4 bytes per sample in the handler's layout. */
const PCM_SCRATCH_BYTES = MAX_FRAME * 2 * 4;

interface Native {
  mod: NativeModule;
  pcmPtr: number;
  packetPtr: number;
  argPtr: number;
}

let native: Native | undefined;
let loading: Promise<void> | undefined;

function setUp(mod: NativeModule): Native {
  // One scratch area for every instance: PCM in/out, packets in/out, a word for GET requests.
  const pcmPtr = mod._malloc(PCM_SCRATCH_BYTES + OPUS_MAX_PACKET_BYTES + 16);
  if (pcmPtr === 0) throw new VoicewireError('OPUS_ENCODER_ERROR', 'libopus wasm: out of memory for the scratch buffers');
  return { mod, pcmPtr, packetPtr: pcmPtr + PCM_SCRATCH_BYTES, argPtr: pcmPtr + PCM_SCRATCH_BYTES + OPUS_MAX_PACKET_BYTES };
}

function loadSync(): Native {
  if (native) return native;
  const arg: Record<string, unknown> = {};
  let mod: NativeModule;
  try {
    // Node and workers: emscripten's glue reads the .wasm beside it and instantiates synchronously.
    mod = createOpusscriptModule(arg) as NativeModule;
  } catch (err) {
    (arg['ready'] as Promise<unknown> | undefined)?.catch(() => undefined);
    throw new VoicewireError('INVALID_STATE', 'the libopus wasm module cannot load synchronously here: call `await initOpus({ wasm })` first', { cause: err });
  }
  if (typeof mod.OpusScriptHandler !== 'function') {
    mod.ready?.catch(() => undefined);
    throw new VoicewireError('INVALID_STATE', 'the libopus wasm module is still loading: call `await initOpus()` first');
  }
  native = setUp(mod);
  return native;
}

/** Where {@link initOpus} gets the `.wasm` from (browsers): its bytes, a compiled module, a URL or a fetch Response. */
export type OpusWasmSource = ArrayBuffer | Uint8Array | WebAssembly.Module | URL | string | Response | PromiseLike<Response>;

/** Options of {@link initOpus}. */
export interface OpusInitOptions {
  /**
   * The file `opusscript/build/opusscript_native_wasm.wasm`, as bytes, a compiled module, a URL,
   * or a fetch Response. Default: let emscripten find it beside its JS glue (works in Node).
   */
  wasm?: OpusWasmSource;
}

/**
 * Loads the libopus wasm module (once; later calls return the same promise). Needed before the
 * first encoder/decoder only where synchronous loading is impossible (a browser's main thread):
 * the `.wasm` is compiled asynchronously, then instantiated. In Node it is optional.
 */
export function initOpus(options: OpusInitOptions = {}): Promise<void> {
  if (native) return Promise.resolve();
  if (loading) return loading;
  const source = options.wasm;
  loading = (async () => {
    if (source === undefined) {
      loadSync();
      return;
    }
    const compiled = await compile(source);
    // This emscripten glue binds the wasm exports (malloc, free, ...) right after
    // `instantiateWasm` returns, so the instance must exist by then: instantiate synchronously
    // from the module compiled above (cheap; only compiling is slow).
    const arg: Record<string, unknown> = {
      instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) {
        const instance = new WebAssembly.Instance(compiled, imports);
        done(instance);
        return instance.exports;
      },
    };
    let mod: NativeModule;
    try {
      mod = createOpusscriptModule(arg) as NativeModule;
    } finally {
      (arg['ready'] as Promise<unknown> | undefined)?.catch(() => undefined);
    }
    if (typeof mod.OpusScriptHandler !== 'function') throw new Error('the module did not initialise');
    native ??= setUp(mod);
  })().catch((err: unknown) => {
    loading = undefined;
    throw err instanceof VoicewireError ? err : new VoicewireError('INVALID_STATE', `the libopus wasm module failed to load: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  });
  return loading;
}

async function compile(source: OpusWasmSource): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  let bytes: ArrayBuffer | Uint8Array;
  if (source instanceof ArrayBuffer || source instanceof Uint8Array) {
    bytes = source;
  } else {
    const response = typeof source === 'string' || source instanceof URL ? await fetch(source) : await source;
    if (!response.ok) throw new VoicewireError('INVALID_STATE', `fetching the libopus wasm failed: HTTP ${response.status}`);
    bytes = new Uint8Array(await response.arrayBuffer());
  }
  return WebAssembly.compile(bytes as BufferSource);
}

function strerror(n: Native, code: number): string {
  const ptr = n.mod._opus_strerror(code);
  const heap = n.mod.HEAPU8;
  let end = ptr;
  while (end < heap.length && heap[end] !== 0) end++;
  let s = '';
  for (let i = ptr; i < end; i++) s += String.fromCharCode(heap[i]!);
  return `${s} (${code})`;
}

// --- the handler pool ------------------------------------------------------------------------------

/** One native handler: a libopus encoder and decoder, each half leased independently. */
interface Slot {
  readonly handler: NativeHandler;
  readonly sampleRate: number;
  readonly channels: number;
  readonly application: OpusApplication;
  readonly lookahead: number;
  readonly defaultComplexity: number;
}

const encoderPool = new Map<string, Slot[]>();
const decoderPool = new Map<string, Slot[]>();
let handlerCount = 0;
let liveEncoders = 0;
let liveDecoders = 0;
let finalized = 0;

function poolOf(pools: Map<string, Slot[]>, key: string): Slot[] {
  let list = pools.get(key);
  if (!list) {
    list = [];
    pools.set(key, list);
  }
  return list;
}

function newSlot(n: Native, sampleRate: number, channels: number, application: OpusApplication): Slot {
  let handler: NativeHandler;
  try {
    handler = new n.mod.OpusScriptHandler(sampleRate, channels, APPLICATIONS[application]);
  } catch (err) {
    throw new VoicewireError('OPUS_ENCODER_ERROR', `libopus could not create an encoder/decoder (${sampleRate} Hz, ${channels} ch): ${typeof err === 'number' ? strerror(n, err) : String(err)}`, { cause: err });
  }
  handlerCount++;
  const get = (request: number): number => {
    const rc = handler._encoder_ctl(request, n.argPtr);
    if (rc < 0) throw new VoicewireError('OPUS_ENCODER_ERROR', `libopus encoder_ctl(${request}): ${strerror(n, rc)}`);
    return n.mod.HEAP32[n.argPtr >> 2]!;
  };
  return { handler, sampleRate, channels, application, lookahead: get(OPUS_GET_LOOKAHEAD), defaultComplexity: get(OPUS_GET_COMPLEXITY) };
}

function acquireEncoder(sampleRate: number, channels: number, application: OpusApplication): Slot {
  const n = loadSync();
  const slot = poolOf(encoderPool, `${sampleRate}/${channels}/${application}`).pop();
  if (slot) return slot;
  const fresh = newSlot(n, sampleRate, channels, application);
  poolOf(decoderPool, `${sampleRate}/${channels}`).push(fresh); // its decoder half is free
  return fresh;
}

function acquireDecoder(sampleRate: number, channels: number): Slot {
  const n = loadSync();
  const slot = poolOf(decoderPool, `${sampleRate}/${channels}`).pop();
  if (slot) return slot;
  const fresh = newSlot(n, sampleRate, channels, 'audio');
  poolOf(encoderPool, `${sampleRate}/${channels}/audio`).push(fresh); // its encoder half is free
  return fresh;
}

function releaseEncoder(slot: Slot): void {
  // Back to the state of a new encoder: no audio history, default settings (the application is
  // fixed per handler, hence part of the pool key).
  const h = slot.handler;
  h._encoder_ctl(OPUS_RESET_STATE, 0);
  h._encoder_ctl(OPUS_SET_BITRATE, OPUS_AUTO);
  h._encoder_ctl(OPUS_SET_COMPLEXITY, slot.defaultComplexity);
  poolOf(encoderPool, `${slot.sampleRate}/${slot.channels}/${slot.application}`).push(slot);
}

function releaseDecoder(slot: Slot): void {
  slot.handler._decoder_ctl(OPUS_RESET_STATE, 0);
  slot.handler._decoder_ctl(OPUS_SET_GAIN, 0);
  poolOf(decoderPool, `${slot.sampleRate}/${slot.channels}`).push(slot);
}

/** A lease on one half of a handler; the FinalizationRegistry holds it, never the instance. */
class Lease {
  slot: Slot | undefined;
  constructor(
    slot: Slot,
    readonly encoder: boolean,
  ) {
    this.slot = slot;
    if (encoder) liveEncoders++;
    else liveDecoders++;
  }

  release(): void {
    const slot = this.slot;
    if (!slot) return;
    this.slot = undefined;
    if (this.encoder) {
      liveEncoders--;
      releaseEncoder(slot);
    } else {
      liveDecoders--;
      releaseDecoder(slot);
    }
  }
}

const registry =
  typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry<Lease>((lease) => {
        if (!lease.slot) return;
        finalized++;
        try {
          lease.release();
        } catch {
          // The module itself failed (a wasm trap): nothing left to return the handler to.
        }
      })
    : undefined;

/** Live-instance and memory figures of the shared libopus module. */
export interface OpusStats {
  /** Encoders created and not yet destroyed (or collected). */
  readonly encoders: number;
  /** Decoders created and not yet destroyed (or collected). */
  readonly decoders: number;
  /** Native handlers allocated (each is one encoder + one decoder; pooled, never freed). */
  readonly handlers: number;
  /** Instances returned to the pool by the FinalizationRegistry because `destroy()` was not called. */
  readonly finalized: number;
  /** Size of the wasm heap in bytes (0 before the module is loaded). */
  readonly heapBytes: number;
}

/** Live-instance counts and heap size of the shared libopus module. */
export function opusStats(): OpusStats {
  return { encoders: liveEncoders, decoders: liveDecoders, handlers: handlerCount, finalized, heapBytes: native ? native.mod.HEAPU8.length : 0 };
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
  if (!OPUS_SAMPLE_RATES.includes(rate as OpusSampleRate)) throw new VoicewireError('INVALID_ARGUMENT', `${what} sampleRate must be one of ${OPUS_SAMPLE_RATES.join(', ')}, got ${String(rate)}`);
  return rate as OpusSampleRate;
}

function checkChannels(channels: unknown, what: string): 1 | 2 {
  if (channels !== 1 && channels !== 2) throw new VoicewireError('INVALID_ARGUMENT', `${what} channels must be 1 or 2, got ${String(channels)}`);
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
  private lease: Lease;

  constructor(options: OpusEncoderOptions = {}) {
    this.sampleRate = checkRate(options.sampleRate ?? 48000, 'OpusEncoder');
    this.channels = checkChannels(options.channels ?? 1, 'OpusEncoder');
    const app = options.application ?? 'audio';
    if (!Object.hasOwn(APPLICATIONS, app)) throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder application must be 'voip', 'audio' or 'lowdelay', got ${String(app)}`);
    this.application = app;
    const slot = acquireEncoder(this.sampleRate, this.channels, app);
    this.lease = new Lease(slot, true);
    registry?.register(this, this.lease, this);
    this.lookahead = slot.lookahead;
    try {
      if (options.bitrate !== undefined) this.setBitrate(options.bitrate);
      if (options.complexity !== undefined) this.setComplexity(options.complexity);
    } catch (err) {
      this.destroy();
      throw err;
    }
  }

  /** True once {@link destroy} was called. */
  get destroyed(): boolean {
    return this.lease.slot === undefined;
  }

  /** Sets the target bitrate (`OPUS_SET_BITRATE`): bit/s 500–512000, `'auto'` or `'max'`. */
  setBitrate(bitrate: number | 'auto' | 'max'): void {
    let v: number;
    if (bitrate === 'auto') v = OPUS_AUTO;
    else if (bitrate === 'max') v = OPUS_BITRATE_MAX;
    else if (Number.isInteger(bitrate) && bitrate >= 500 && bitrate <= 512000) v = bitrate;
    else throw new VoicewireError('INVALID_ARGUMENT', `Opus bitrate must be an integer 500–512000, 'auto' or 'max', got ${String(bitrate)}`);
    this.ctl(OPUS_SET_BITRATE, v);
  }

  /** The bitrate libopus is using, bit/s (`OPUS_GET_BITRATE`; resolves `'auto'`). */
  getBitrate(): number {
    return this.get(OPUS_GET_BITRATE);
  }

  /** Sets the complexity 0–10 (`OPUS_SET_COMPLEXITY`). */
  setComplexity(complexity: number): void {
    if (!Number.isInteger(complexity) || complexity < 0 || complexity > 10) throw new VoicewireError('INVALID_ARGUMENT', `Opus complexity must be an integer 0–10, got ${String(complexity)}`);
    this.ctl(OPUS_SET_COMPLEXITY, complexity);
  }

  /** The complexity in use. */
  getComplexity(): number {
    return this.get(OPUS_GET_COMPLEXITY);
  }

  /**
   * Encodes one frame: `pcm.length / channels` samples per channel must be a valid Opus frame size
   * (2.5–120 ms). Int16 samples are used as they are; Float32 samples (nominal ±1) are scaled by
   * 32767, rounded and clamped (the build's entry point takes 16-bit PCM). Returns a new packet.
   */
  encode(pcm: Int16Array | Float32Array): Uint8Array {
    const n = this.native();
    const len = this.encodeToScratch(n, pcm);
    return n.mod.HEAPU8.slice(n.packetPtr, n.packetPtr + len);
  }

  /** Like {@link encode}, writing the packet into `out` at `offset`; returns its length. */
  encodeInto(pcm: Int16Array | Float32Array, out: Uint8Array, offset = 0): number {
    const n = this.native();
    const len = this.encodeToScratch(n, pcm);
    if (offset < 0 || offset + len > out.length) throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder.encodeInto: ${len} bytes do not fit at offset ${offset} of ${out.length}`);
    out.set(n.mod.HEAPU8.subarray(n.packetPtr, n.packetPtr + len), offset);
    return len;
  }

  /** Clears the encoder's history (`OPUS_RESET_STATE`), keeping its settings. */
  reset(): void {
    this.ctl(OPUS_RESET_STATE, 0);
  }

  /** Returns the native encoder to the pool. Idempotent; any later call raises `INVALID_STATE`. */
  destroy(): void {
    if (!this.lease.slot) return;
    registry?.unregister(this);
    this.lease.release();
  }

  private native(): Native {
    if (!this.lease.slot || !native) throw new VoicewireError('INVALID_STATE', 'OpusEncoder used after destroy()');
    return native;
  }

  private encodeToScratch(n: Native, pcm: Int16Array | Float32Array): number {
    const total = pcm.length;
    const frame = total / this.channels;
    if (!(pcm instanceof Int16Array || pcm instanceof Float32Array)) throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder.encode takes an Int16Array or Float32Array, got ${describe(pcm)}`);
    if (!isFrameSize(frame, this.sampleRate)) {
      throw new VoicewireError('INVALID_ARGUMENT', `OpusEncoder.encode: ${frame} samples per channel is not an Opus frame at ${this.sampleRate} Hz (2.5, 5, 10, 20, 40, 60, 80, 100 or 120 ms)`);
    }
    // Views are taken here, after anything that could have grown the heap.
    const heap = n.mod.HEAPU32;
    const base = n.pcmPtr >> 2;
    if (pcm instanceof Int16Array) {
      for (let i = 0; i < total; i++) {
        const s = pcm[i]!;
        heap[base + i] = (s & 0xff) | ((s & 0xff00) << 8);
      }
    } else {
      for (let i = 0; i < total; i++) {
        let v = pcm[i]! * 32767;
        v = v >= 32767 ? 32767 : v <= -32768 ? -32768 : v;
        const s = (v + (v >= 0 ? 0.5 : -0.5)) | 0; // NaN becomes 0
        heap[base + i] = (s & 0xff) | ((s & 0xff00) << 8);
      }
    }
    const len = this.lease.slot!.handler._encode(n.pcmPtr, total, n.packetPtr, frame);
    if (len < 0) throw new VoicewireError('OPUS_ENCODER_ERROR', `libopus opus_encode: ${strerror(n, len)}`);
    return len;
  }

  private ctl(request: number, value: number): void {
    const n = this.native();
    const rc = this.lease.slot!.handler._encoder_ctl(request, value);
    if (rc < 0) throw new VoicewireError('OPUS_ENCODER_ERROR', `libopus encoder_ctl(${request}, ${value}): ${strerror(n, rc)}`);
  }

  private get(request: number): number {
    const n = this.native();
    const rc = this.lease.slot!.handler._encoder_ctl(request, n.argPtr);
    if (rc < 0) throw new VoicewireError('OPUS_ENCODER_ERROR', `libopus encoder_ctl(${request}): ${strerror(n, rc)}`);
    return n.mod.HEAP32[n.argPtr >> 2]!;
  }
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
 */
export class OpusDecoder {
  /** Output sample rate. */
  readonly sampleRate: OpusSampleRate;
  /** Output channels. */
  readonly channels: 1 | 2;
  private lease: Lease;

  constructor(options: OpusDecoderOptions = {}) {
    this.sampleRate = checkRate(options.sampleRate ?? 48000, 'OpusDecoder');
    this.channels = checkChannels(options.channels ?? 1, 'OpusDecoder');
    this.lease = new Lease(acquireDecoder(this.sampleRate, this.channels), false);
    registry?.register(this, this.lease, this);
    if (options.gain !== undefined) {
      try {
        this.setGain(options.gain);
      } catch (err) {
        this.destroy();
        throw err;
      }
    }
  }

  /** True once {@link destroy} was called. */
  get destroyed(): boolean {
    return this.lease.slot === undefined;
  }

  /** Sets the output gain, Q7.8 dB (-32768..32767; RFC 7845 §5.1 "Output Gain"). */
  setGain(q78: number): void {
    if (!Number.isInteger(q78) || q78 < -32768 || q78 > 32767) throw new VoicewireError('INVALID_ARGUMENT', `Opus gain must be a Q7.8 integer in -32768..32767, got ${String(q78)}`);
    const n = this.native();
    const rc = this.lease.slot!.handler._decoder_ctl(OPUS_SET_GAIN, q78);
    if (rc < 0) throw new VoicewireError('OPUS_DECODER_ERROR', `libopus decoder_ctl(OPUS_SET_GAIN): ${strerror(n, rc)}`);
  }

  /** The output gain in use, Q7.8 dB. */
  getGain(): number {
    const n = this.native();
    const rc = this.lease.slot!.handler._decoder_ctl(OPUS_GET_GAIN, n.argPtr);
    if (rc < 0) throw new VoicewireError('OPUS_DECODER_ERROR', `libopus decoder_ctl(OPUS_GET_GAIN): ${strerror(n, rc)}`);
    return n.mod.HEAP32[n.argPtr >> 2]!;
  }

  /** Decodes one packet into a new interleaved Int16Array. */
  decode(packet: Uint8Array): Int16Array {
    const n = this.native();
    const samples = this.check(packet);
    const out = new Int16Array(samples * this.channels);
    this.run(n, packet, out, 0);
    return out;
  }

  /** Decodes one packet into a new interleaved Float32Array (16-bit samples / 32768). */
  decodeFloat(packet: Uint8Array): Float32Array {
    const n = this.native();
    const samples = this.check(packet);
    const out = new Float32Array(samples * this.channels);
    this.run(n, packet, out, 0);
    return out;
  }

  /**
   * Decodes one packet into `out` starting at element `offset` (interleaved). Returns the samples
   * per channel written. `out` must have room for the packet's duration
   * ({@link opusPacketDuration} × channels).
   * @throws `OPUS_INVALID_PACKET` for a malformed packet, `INVALID_ARGUMENT` when `out` is too small.
   */
  decodeInto(packet: Uint8Array, out: Int16Array | Float32Array, offset = 0): number {
    const n = this.native();
    const values = this.check(packet) * this.channels;
    if (offset < 0 || offset + values > out.length) throw new VoicewireError('INVALID_ARGUMENT', `OpusDecoder.decodeInto: ${values} samples do not fit at offset ${offset} of ${out.length}`);
    return this.run(n, packet, out, offset);
  }

  /** Validates a packet; returns its duration in samples per channel at the output rate. */
  private check(packet: Uint8Array): number {
    if (!(packet instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `OpusDecoder.decode takes a Uint8Array packet, got ${describe(packet)}`);
    if (packet.length > OPUS_MAX_PACKET_BYTES) throw new VoicewireError('OPUS_INVALID_PACKET', `an Opus packet of ${packet.length} bytes exceeds ${OPUS_MAX_PACKET_BYTES}`);
    return opusPacketDuration(packet, this.sampleRate);
  }

  /** Copies the packet in, decodes, converts the handler's PCM layout out. Views are fresh here. */
  private run(n: Native, packet: Uint8Array, out: Int16Array | Float32Array, offset: number): number {
    n.mod.HEAPU8.set(packet, n.packetPtr);
    const got = this.lease.slot!.handler._decode(n.packetPtr, packet.length, n.pcmPtr);
    if (got < 0) {
      throw new VoicewireError(got === OPUS_INVALID_PACKET ? 'OPUS_INVALID_PACKET' : 'OPUS_DECODER_ERROR', `libopus opus_decode: ${strerror(n, got)}`);
    }
    const count = got * this.channels;
    const heap = n.mod.HEAPU32;
    const base = n.pcmPtr >> 2;
    if (out instanceof Int16Array) {
      for (let i = 0; i < count; i++) {
        const v = heap[base + i]!;
        out[offset + i] = (v & 0xff) | ((v >>> 8) & 0xff00);
      }
    } else {
      for (let i = 0; i < count; i++) {
        const v = heap[base + i]!;
        out[offset + i] = (((v & 0xff) | ((v >>> 8) & 0xff00)) << 16 >> 16) / 32768;
      }
    }
    return got;
  }

  /** Clears the decoder's history (`OPUS_RESET_STATE`), keeping the gain. */
  reset(): void {
    this.native();
    this.lease.slot!.handler._decoder_ctl(OPUS_RESET_STATE, 0);
  }

  /** Returns the native decoder to the pool. Idempotent; any later call raises `INVALID_STATE`. */
  destroy(): void {
    if (!this.lease.slot) return;
    registry?.unregister(this);
    this.lease.release();
  }

  private native(): Native {
    if (!this.lease.slot || !native) throw new VoicewireError('INVALID_STATE', 'OpusDecoder used after destroy()');
    return native;
  }
}

/**
 * The libopus version of this build. opusscript 0.1.1 declares libopus 1.4; the wasm links no
 * `opus_get_version_string`, so the version is not readable from it. Probed in
 * `test/audio/opus.test.ts`: the build accepts `OPUS_SET_INBAND_FEC(2)` (new in 1.4; 1.3 rejects it) and
 * answers `OPUS_UNIMPLEMENTED` to 1.5's requests (`OPUS_SET_DRED_DURATION`, and
 * `OPUS_SET_COMPLEXITY` on a decoder).
 */
export const OPUS_LIBRARY_VERSION = 'libopus 1.4 (opusscript 0.1.1 wasm)';
