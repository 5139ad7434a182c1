/**
 * The native libopus backend for Node: the prebuilt binding of `@evan/opus` (MIT; libopus
 * compiled for linux/macOS x64/arm64 and windows x64, shipped in the package, nothing built at
 * install). An optional dependency: when it is missing, or its binary does not load on this
 * platform, the wasm backend is used. `VOICEWIRE_OPUS=wasm` in the environment forces wasm.
 *
 * The binding is driven through its raw addon (`@evan/opus/node/<arch>-<platform>.node`), not its
 * JS wrapper: `encode`/`decode` write into one buffer the addon owns and return the length, and
 * the wrapper's `slice` of that buffer is a copy we do not need (we copy once, into the caller's
 * array). The addon reads Int16 PCM straight from the caller's array (no copy in).
 * That package's `node/index.js` (loaded by its main entry, `require('@evan/opus')`) replaces the
 * addon's `Encoder`/`Decoder` exports in place with subclasses whose `encode`/`decode` return that
 * copy instead of the length; the addon object is shared, so an application that also uses
 * `@evan/opus` directly would hand us the subclasses. We therefore take the root (native) classes
 * of the prototype chain, and refuse any result that is not a length.
 * Memory: the addon frees a libopus state when its JS object is collected; `free()` drops our
 * reference. The instance cap and the pool of `opus.ts` apply as for wasm.
 */
import { createRequire } from 'node:module';
import { VoicewireError } from '../util/errors.js';
import { setOpusBackendProvider } from '../audio/opus.js';
import { checkBackendArgs, floatToS16, type OpusBackend, type OpusBackendDecoder, type OpusBackendEncoder } from '../audio/opus-backend.js';

interface AddonEncoder {
  encode(pcm: ArrayBufferView): number;
  ctl(request: number, value?: number): number;
}
interface AddonDecoder {
  decode(packet: ArrayBufferView): number;
  ctl(request: number, value?: number): number;
}
/** The raw addon's exports (`@evan/opus/node/<arch>-<platform>.node`). */
export interface Addon {
  Encoder: new (options: { channels: number; sample_rate: number; application: string }) => AddonEncoder;
  Decoder: new (options: { channels: number; sample_rate: number }) => AddonDecoder;
  buffers: { encoder(): Uint8Array; decoder(): Uint8Array };
}

const APPLICATION_NAMES: Record<number, string> = { 2048: 'voip', 2049: 'audio', 2051: 'restricted_lowdelay' };

/** The addon's errors read `Opus(InvalidPacket)`; anything else it throws is a libopus failure. */
function addonError(err: unknown, encoder: boolean, what: string): VoicewireError {
  const message = err instanceof Error ? err.message : String(err);
  if (/InvalidPacket/.test(message)) return new VoicewireError('OPUS_INVALID_PACKET', `libopus ${what}: ${message}`, { cause: err });
  if (/AllocFail/.test(message)) return new VoicewireError('OPUS_CAPACITY', `libopus ${what}: ${message}`, { cause: err });
  return new VoicewireError(encoder ? 'OPUS_ENCODER_ERROR' : 'OPUS_DECODER_ERROR', `libopus ${what}: ${message}`, { cause: err });
}

/** The first class in `C`'s chain that defines `method` itself and whose parent does not: the addon's own class. */
function rootClass<T extends abstract new (...args: never[]) => unknown>(C: T, method: string): T {
  let c = C;
  for (;;) {
    const parent = Object.getPrototypeOf(c) as T | null;
    if (typeof parent !== 'function' || parent === Function.prototype || !(parent.prototype && method in (parent.prototype as object))) return c;
    c = parent;
  }
}

/** A length from the addon; anything else means its methods were replaced (see the module comment). */
function length(n: unknown, what: 'encode' | 'decode'): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new VoicewireError(what === 'encode' ? 'OPUS_ENCODER_ERROR' : 'OPUS_DECODER_ERROR', `@evan/opus ${what} returned ${typeof n}, not a byte length`);
  return n;
}

/**
 * The backend over a loaded `@evan/opus` addon object (exported for tests; use {@link nativeOpusBackend}).
 * @internal
 */
export function nativeOpusBackendOf(addon: Addon): OpusBackend {
  // Captured now: later loads of `@evan/opus/node/index.js` overwrite the exports (module comment).
  const Encoder = rootClass(addon.Encoder, 'encode');
  const Decoder = rootClass(addon.Decoder, 'decode');
  const packetOut = addon.buffers.encoder();
  const pcmOutBytes = addon.buffers.decoder();
  const pcmOut = new Int16Array(pcmOutBytes.buffer, pcmOutBytes.byteOffset, pcmOutBytes.byteLength >> 1);
  /** Float input converted to 16-bit (120 ms stereo at 48 kHz). */
  const scratch = new Int16Array(5760 * 2);

  class NativeEncoder implements OpusBackendEncoder {
    constructor(private e: AddonEncoder | undefined) {}
    encode(pcm: Int16Array | Float32Array): Uint8Array {
      const e = this.e!;
      let input: Int16Array = pcm as Int16Array;
      if (pcm instanceof Float32Array) {
        input = scratch.subarray(0, pcm.length);
        for (let i = 0; i < pcm.length; i++) input[i] = floatToS16(pcm[i]!);
      }
      let len: unknown;
      try {
        len = e.encode(input);
      } catch (err) {
        throw addonError(err, true, 'opus_encode');
      }
      return packetOut.subarray(0, length(len, 'encode'));
    }
    set(request: number, value: number): number {
      try {
        return this.e!.ctl(request, value);
      } catch (err) {
        throw addonError(err, true, `encoder_ctl(${request}, ${value})`);
      }
    }
    get(request: number): number {
      try {
        return this.e!.ctl(request);
      } catch (err) {
        throw addonError(err, true, `encoder_ctl(${request})`);
      }
    }
    free(): void {
      this.e = undefined;
    }
  }

  class NativeDecoder implements OpusBackendDecoder {
    constructor(
      private d: AddonDecoder | undefined,
      private readonly channels: number,
    ) {}
    decode(packet: Uint8Array, out: Int16Array | Float32Array, offset: number): number {
      let bytes: unknown;
      try {
        bytes = this.d!.decode(packet);
      } catch (err) {
        throw addonError(err, false, 'opus_decode');
      }
      const count = length(bytes, 'decode') >> 1;
      if (out instanceof Int16Array) {
        out.set(pcmOut.subarray(0, count), offset);
      } else {
        for (let i = 0; i < count; i++) out[offset + i] = pcmOut[i]! / 32768;
      }
      return count / this.channels;
    }
    set(request: number, value: number): number {
      try {
        return this.d!.ctl(request, value);
      } catch (err) {
        throw addonError(err, false, `decoder_ctl(${request}, ${value})`);
      }
    }
    get(request: number): number {
      try {
        return this.d!.ctl(request);
      } catch (err) {
        throw addonError(err, false, `decoder_ctl(${request})`);
      }
    }
    free(): void {
      this.d = undefined;
    }
  }

  return {
    name: 'native',
    description: 'libopus (native, @evan/opus)',
    createEncoder(sampleRate, channels, application) {
      checkBackendArgs(sampleRate, channels, application);
      try {
        return new NativeEncoder(new Encoder({ channels, sample_rate: sampleRate, application: APPLICATION_NAMES[application] ?? 'audio' }));
      } catch (err) {
        throw addonError(err, true, 'opus_encoder_create');
      }
    },
    createDecoder(sampleRate, channels) {
      checkBackendArgs(sampleRate, channels);
      try {
        return new NativeDecoder(new Decoder({ channels, sample_rate: sampleRate }), channels);
      } catch (err) {
        throw addonError(err, false, 'opus_decoder_create');
      }
    },
  };
}

let cached: OpusBackend | null | undefined;

/**
 * The native libopus backend, or undefined when `@evan/opus` is not installed or its binary does
 * not load here (it is then looked for once only).
 */
export function nativeOpusBackend(): OpusBackend | undefined {
  if (cached !== undefined) return cached ?? undefined;
  cached = null;
  try {
    // Never the ambient `require`: in the ESM build the bundler rewrites it to a shim that throws,
    // and the catch below then chose wasm silently (issue 22). import.meta.url is shimmed in CJS.
    const req = createRequire(import.meta.url);
    const addon = req(`@evan/opus/node/${process.arch}-${process.platform}.node`) as Addon;
    const backend = nativeOpusBackendOf(addon);
    // A smoke test: a binary that loads but does not work must not replace the wasm.
    const e = backend.createEncoder(48000, 1, 2049);
    const packet = e.encode(new Int16Array(960), 960);
    const d = backend.createDecoder(48000, 1);
    if (d.decode(packet.slice(), new Int16Array(960), 0) !== 960) return undefined;
    cached = backend;
  } catch {
    return undefined;
  }
  return cached;
}

/**
 * Makes new Opus encoders and decoders use the native libopus when it is installed (and
 * `VOICEWIRE_OPUS` is not `wasm`), else the wasm. Called by `voicewire/node` when it loads.
 */
export function registerNativeOpus(): void {
  setOpusBackendProvider(() => (process.env['VOICEWIRE_OPUS'] === 'wasm' ? undefined : nativeOpusBackend()));
}
