/**
 * The wasm libopus backend: the libopus build that `opusscript` ships
 * (`opusscript/build/opusscript_native_wasm.js`, libopus 1.4), driven through its raw emscripten
 * module instead of opusscript's JavaScript wrapper. The default backend, and the only one in
 * browsers.
 *
 * Why not the wrapper: all its instances share one wasm heap, its PCM views use a byte address as
 * a 16-bit index (so the 80th instance's views fall outside the heap), and when the heap grows
 * every view it holds is detached ("detached ArrayBuffer"); it also truncates decoded packets
 * longer than 60 ms and cannot encode frames of 80 ms or more. This backend:
 * - loads ONE module instance and reads `HEAPU8`/`HEAPU32` afresh on every call, so heap growth
 *   never leaves a stale view behind;
 * - copies PCM and packets through one scratch area allocated once (calls are synchronous and
 *   never re-entrant, so instances need no buffers of their own);
 * - shares native `OpusScriptHandler` objects: each holds one libopus encoder AND one decoder, so
 *   an encoder and a decoder of the same rate and channels share a handler (half the memory of
 *   one handler each); a handler is freed (`destroy_handler`, its memory back to the wasm malloc
 *   for any shape) as soon as both halves are free;
 * - after a wasm trap (`RuntimeError`, emscripten's `Aborted()`), treats the module as broken:
 *   its instances fail with a `VoicewireError`, and the next instance is made in a fresh module.
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
import { VoicewireError } from '../util/errors.js';
import { checkBackendArgs, floatToS16, OPUS_AUTO, OPUS_GET_COMPLEXITY, OPUS_INVALID_PACKET_CODE, OPUS_RESET_STATE, OPUS_SET_BITRATE, OPUS_SET_COMPLEXITY, OPUS_SET_GAIN, type OpusBackend, type OpusBackendDecoder, type OpusBackendEncoder } from './opus-backend.js';

/** Largest packet this backend accepts for decoding, in bytes (RFC 6716 allows 48 frames of 1275 bytes). */
const OPUS_MAX_PACKET_BYTES = 65536;

// --- the module ----------------------------------------------------------------------------------

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
  /** A wasm trap happened in this module: its memory can no longer be trusted. */
  broken: boolean;
  /** Handlers allocated in it and not freed. */
  handlers: number;
}

let native: Native | undefined;
let loading: Promise<void> | undefined;
/** The module last loaded (kept after a trap, to load a fresh one from the same compiled code). */
let compiledModule: WebAssembly.Module | undefined;

/** emscripten prints `Aborted(...)` to stderr before it traps; the trap itself is reported to the caller. */
function quiet(): Record<string, unknown> {
  return { print: () => undefined, printErr: () => undefined };
}

function setUp(mod: NativeModule): Native {
  // One scratch area for every instance: PCM in/out, packets in/out, a word for GET requests.
  const pcmPtr = mod._malloc(PCM_SCRATCH_BYTES + OPUS_MAX_PACKET_BYTES + 16);
  if (pcmPtr === 0) throw new VoicewireError('OPUS_CAPACITY', 'libopus wasm: out of memory for the scratch buffers');
  return { mod, pcmPtr, packetPtr: pcmPtr + PCM_SCRATCH_BYTES, argPtr: pcmPtr + PCM_SCRATCH_BYTES + OPUS_MAX_PACKET_BYTES, broken: false, handlers: 0 };
}

function loadSync(): Native {
  if (native && !native.broken) return native;
  const arg: Record<string, unknown> = quiet();
  if (compiledModule) {
    // Loaded by initOpus({ wasm }) before: a fresh instance of the same compiled code.
    const compiled = compiledModule;
    arg['instantiateWasm'] = (imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) => {
      const instance = new WebAssembly.Instance(compiled, imports);
      done(instance);
      return instance.exports;
    };
  }
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
      ...quiet(),
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
    compiledModule = compiled;
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
  if (n.broken) return `error ${code}`;
  const ptr = n.mod._opus_strerror(code);
  const heap = n.mod.HEAPU8;
  let end = ptr;
  while (end < heap.length && heap[end] !== 0) end++;
  let s = '';
  for (let i = ptr; i < end; i++) s += String.fromCharCode(heap[i]!);
  return `${s} (${code})`;
}


// --- the backend -----------------------------------------------------------------------------------

/** One native handler: a libopus encoder and decoder, each half leased independently. */
interface Handler {
  readonly n: Native;
  readonly native: NativeHandler;
  readonly key: string;
  encoderUsed: boolean;
  decoderUsed: boolean;
  /** The encoder's default complexity, restored when its half is released. */
  readonly complexity: number;
}

/** Handlers with a free half, by shape: a free decoder half keyed `rate/ch`, a free encoder half `rate/ch/app`. */
const freeDecoderHalves = new Map<string, Set<Handler>>();
const freeEncoderHalves = new Map<string, Set<Handler>>();

function setOf(map: Map<string, Set<Handler>>, key: string): Set<Handler> {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  return set;
}

function takeFree(map: Map<string, Set<Handler>>, key: string): Handler | undefined {
  const set = map.get(key);
  if (!set) return undefined;
  for (const h of set) {
    set.delete(h);
    if (!h.n.broken) return h;
  }
  return undefined;
}

/** A trap (RuntimeError, abort) leaves the module's memory in an unknown state: stop using it. */
function trapped(n: Native, err: unknown): never {
  if (err instanceof VoicewireError) throw err;
  n.broken = true;
  freeDecoderHalves.clear();
  freeEncoderHalves.clear();
  throw err; // the caller (opus.ts) wraps it in a VoicewireError
}

function newHandler(sampleRate: number, channels: number, application: number): Handler {
  const n = loadSync();
  let h: NativeHandler;
  try {
    h = new n.mod.OpusScriptHandler(sampleRate, channels, application);
  } catch (err) {
    // libopus creation fails only when malloc does (arguments are checked before): the heap is full.
    if (typeof err === 'number') throw new VoicewireError('OPUS_CAPACITY', `libopus wasm could not create an encoder/decoder (${sampleRate} Hz, ${channels} ch): ${strerror(n, err)}`, { cause: err });
    trapped(n, err);
  }
  n.handlers++;
  let complexity = 9;
  if (h._encoder_ctl(OPUS_GET_COMPLEXITY, n.argPtr) >= 0) complexity = n.mod.HEAP32[n.argPtr >> 2]!;
  return { n, native: h, key: `${sampleRate}/${channels}`, encoderUsed: false, decoderUsed: false, complexity };
}

function releaseHalf(h: Handler, encoderHalf: boolean, application: number): void {
  if (encoderHalf) h.encoderUsed = false;
  else h.decoderUsed = false;
  if (h.n.broken) return;
  if (!h.encoderUsed && !h.decoderUsed) {
    // Both halves free: give the memory back to malloc, where any shape can use it.
    freeDecoderHalves.get(h.key)?.delete(h);
    for (const set of freeEncoderHalves.values()) set.delete(h);
    h.n.mod.OpusScriptHandler.destroy_handler(h.native);
    h.n.handlers--;
    return;
  }
  // The other half is in use: reset this one to the state of a new instance and keep it for reuse
  // (the application is fixed per handler, hence part of the key).
  if (encoderHalf) {
    h.native._encoder_ctl(OPUS_RESET_STATE, 0);
    h.native._encoder_ctl(OPUS_SET_BITRATE, OPUS_AUTO);
    h.native._encoder_ctl(OPUS_SET_COMPLEXITY, h.complexity);
    setOf(freeEncoderHalves, `${h.key}/${application}`).add(h);
  } else {
    h.native._decoder_ctl(OPUS_RESET_STATE, 0);
    h.native._decoder_ctl(OPUS_SET_GAIN, 0);
    setOf(freeDecoderHalves, h.key).add(h);
  }
}

/**
 * What the encoder and decoder halves of a handler share: the check that the half is alive and its
 * module has not trapped, the ctl calls, and the release to the pool.
 */
abstract class WasmHalf {
  private h: Handler | undefined;
  constructor(
    h: Handler,
    private readonly encoder: boolean,
    /** The encoder's application (its pool key); 0 for a decoder. */
    private readonly application: number,
  ) {
    this.h = h;
    if (encoder) h.encoderUsed = true;
    else h.decoderUsed = true;
  }

  protected handler(): Handler {
    const h = this.h;
    const what = this.encoder ? 'encoder' : 'decoder';
    if (!h) throw new VoicewireError('INVALID_STATE', `the libopus wasm ${what} was freed`);
    if (h.n.broken) throw new VoicewireError(this.encoder ? 'OPUS_ENCODER_ERROR' : 'OPUS_DECODER_ERROR', `the libopus wasm module failed earlier (a wasm trap); this ${what} is lost`, { closeCode: 1011 });
    return h;
  }

  private ctl(h: Handler, request: number, arg: number): number {
    return this.encoder ? h.native._encoder_ctl(request, arg) : h.native._decoder_ctl(request, arg);
  }

  set(request: number, value: number): number {
    const h = this.handler();
    try {
      return this.ctl(h, request, value);
    } catch (err) {
      trapped(h.n, err);
    }
  }

  get(request: number): number {
    const h = this.handler();
    const n = h.n;
    try {
      const rc = this.ctl(h, request, n.argPtr);
      if (rc < 0) throw new VoicewireError(this.encoder ? 'OPUS_ENCODER_ERROR' : 'OPUS_DECODER_ERROR', `libopus ${this.encoder ? 'encoder' : 'decoder'}_ctl(${request}): ${strerror(n, rc)}`);
      return n.mod.HEAP32[n.argPtr >> 2]!;
    } catch (err) {
      trapped(n, err);
    }
  }

  free(): void {
    const h = this.h;
    if (!h) return;
    this.h = undefined;
    releaseHalf(h, this.encoder, this.application);
  }
}

class WasmEncoder extends WasmHalf implements OpusBackendEncoder {
  constructor(h: Handler, application: number) {
    super(h, true, application);
  }

  encode(pcm: Int16Array | Float32Array, frameSize: number): Uint8Array {
    const h = this.handler();
    const n = h.n;
    try {
      // Views are taken here, after anything that could have grown the heap.
      const heap = n.mod.HEAPU32;
      const base = n.pcmPtr >> 2;
      const total = pcm.length;
      if (pcm instanceof Int16Array) {
        for (let i = 0; i < total; i++) {
          const s = pcm[i]!;
          heap[base + i] = (s & 0xff) | ((s & 0xff00) << 8);
        }
      } else {
        for (let i = 0; i < total; i++) {
          const s = floatToS16(pcm[i]!);
          heap[base + i] = (s & 0xff) | ((s & 0xff00) << 8);
        }
      }
      const len = h.native._encode(n.pcmPtr, total, n.packetPtr, frameSize);
      if (len < 0) throw new VoicewireError('OPUS_ENCODER_ERROR', `libopus opus_encode: ${strerror(n, len)}`);
      return n.mod.HEAPU8.subarray(n.packetPtr, n.packetPtr + len);
    } catch (err) {
      trapped(n, err);
    }
  }
}

class WasmDecoder extends WasmHalf implements OpusBackendDecoder {
  constructor(
    h: Handler,
    private readonly channels: number,
  ) {
    super(h, false, 0);
  }

  decode(packet: Uint8Array, out: Int16Array | Float32Array, offset: number): number {
    const h = this.handler();
    const n = h.n;
    try {
      n.mod.HEAPU8.set(packet, n.packetPtr);
      const got = h.native._decode(n.packetPtr, packet.length, n.pcmPtr);
      if (got < 0) {
        throw new VoicewireError(got === OPUS_INVALID_PACKET_CODE ? 'OPUS_INVALID_PACKET' : 'OPUS_DECODER_ERROR', `libopus opus_decode: ${strerror(n, got)}`);
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
          out[offset + i] = ((((v & 0xff) | ((v >>> 8) & 0xff00)) << 16) >> 16) / 32768;
        }
      }
      return got;
    } catch (err) {
      trapped(n, err);
    }
  }
}

/** The libopus wasm backend (opusscript's build of libopus 1.4). */
export const wasmOpusBackend: OpusBackend = {
  name: 'wasm',
  description: 'libopus 1.4 (opusscript 0.1.1 wasm)',
  createEncoder(sampleRate, channels, application) {
    checkBackendArgs(sampleRate, channels, application);
    const h = takeFree(freeEncoderHalves, `${sampleRate}/${channels}/${application}`) ?? newHandler(sampleRate, channels, application);
    if (!h.decoderUsed) setOf(freeDecoderHalves, h.key).add(h); // a new handler: its decoder half is free
    return new WasmEncoder(h, application);
  },
  createDecoder(sampleRate, channels) {
    checkBackendArgs(sampleRate, channels);
    const h = takeFree(freeDecoderHalves, `${sampleRate}/${channels}`) ?? newHandler(sampleRate, channels, 2049);
    if (!h.encoderUsed) setOf(freeEncoderHalves, `${h.key}/2049`).add(h); // its encoder half is free
    return new WasmDecoder(h, channels);
  },
  memoryBytes() {
    return native ? native.mod.HEAPU8.length : 0;
  },
};

/** Handlers (encoder + decoder pairs) allocated in the current module. */
export function wasmHandlerCount(): number {
  return native ? native.handlers : 0;
}

/**
 * Test hook: marks the current module as trapped, as a wasm `RuntimeError` would. Its instances
 * then fail with `VoicewireError`s and the next instance loads a fresh module.
 * @internal
 */
export function breakWasmModuleForTest(): void {
  if (native) {
    native.broken = true;
    freeDecoderHalves.clear();
    freeEncoderHalves.clear();
  }
}
