/**
 * The seam between voicewire's Opus classes and a libopus implementation. Two exist: the libopus
 * wasm that `opusscript` ships (`opus-wasm.ts`, everywhere, the default) and a native libopus
 * binding (`src/node/opus-native.ts`, Node only, chosen when the optional dependency is
 * installed). The platform-neutral core only knows this interface; the Node entry registers the
 * native one with `setOpusBackendProvider` (see `opus.ts`).
 *
 * Contract: a backend checks the shape it is created with ({@link checkBackendArgs}: a backend is
 * reachable directly) and nothing per call that `OpusEncoder`/`OpusDecoder` already validated
 * (frame sizes, packet lengths); it reports libopus failures as
 * `VoicewireError`s and may throw anything on a crash (a wasm trap, a native exception), which
 * the caller wraps. Calls are synchronous and never re-entrant.
 */
import { describeValue } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

/** One libopus encoder held by a backend. */
export interface OpusBackendEncoder {
  /**
   * Encodes one frame of `frameSize` samples per channel (interleaved; Float32 nominal ±1 is
   * scaled by 32767, rounded half away from zero and clamped, NaN → 0). Returns the packet as a
   * view that stays valid only until the next call into the backend.
   */
  encode(pcm: Int16Array | Float32Array, frameSize: number): Uint8Array;
  /** `opus_encoder_ctl` with an int argument (SET requests and RESET_STATE); returns libopus's code. */
  set(request: number, value: number): number;
  /** `opus_encoder_ctl` with an out-pointer (GET requests); returns the value, or throws. */
  get(request: number): number;
  /** Frees the native state. The object is unusable afterwards. */
  free(): void;
}

/** One libopus decoder held by a backend. */
export interface OpusBackendDecoder {
  /**
   * Decodes one packet into `out` at element `offset` (interleaved; Float32 as 16-bit / 32768).
   * The caller checked that `out` has room for the packet's duration. Returns samples per channel.
   */
  decode(packet: Uint8Array, out: Int16Array | Float32Array, offset: number): number;
  /** `opus_decoder_ctl` with an int argument; returns libopus's code. */
  set(request: number, value: number): number;
  /** `opus_decoder_ctl` GET request; returns the value, or throws. */
  get(request: number): number;
  free(): void;
}

/** A libopus implementation. */
export interface OpusBackend {
  /** `'wasm'`, `'native'`, or a test double's name. */
  readonly name: string;
  /** What it is, for reports: e.g. `"libopus 1.4 (opusscript 0.1.1 wasm)"`. */
  readonly description: string;
  /** A new encoder; `application` is libopus's code (2048 voip, 2049 audio, 2051 lowdelay). */
  createEncoder(sampleRate: number, channels: 1 | 2, application: number): OpusBackendEncoder;
  createDecoder(sampleRate: number, channels: 1 | 2): OpusBackendDecoder;
  /** Bytes of memory the backend holds, when it can tell (the wasm heap size); else undefined. */
  memoryBytes?(): number | undefined;
}

// libopus request codes (opus_defines.h), shared by the backends and the wrappers.
export const OPUS_SET_BITRATE = 4002;
export const OPUS_GET_BITRATE = 4003;
export const OPUS_SET_COMPLEXITY = 4010;
export const OPUS_GET_COMPLEXITY = 4011;
export const OPUS_GET_LOOKAHEAD = 4027;
export const OPUS_RESET_STATE = 4028;
export const OPUS_SET_GAIN = 4034;
export const OPUS_GET_GAIN = 4045;
export const OPUS_AUTO = -1000;
export const OPUS_BITRATE_MAX = -1;
/** libopus error code for a malformed packet. */
export const OPUS_INVALID_PACKET_CODE = -4;

/** libopus's error strings (opus_strerror), for backends that only return the code. */
export function opusErrorName(code: number): string {
  const names = ['success', 'invalid argument', 'buffer too small', 'internal error', 'corrupted stream', 'request not implemented', 'invalid state', 'memory allocation failed'];
  return `${names[-code] ?? 'unknown error'} (${code})`;
}

/** Float sample (nominal ±1) to the 16-bit value libopus gets: ×32767, clamped, rounded half away from zero; NaN → 0. */
export function floatToS16(x: number): number {
  let v = x * 32767;
  v = v >= 32767 ? 32767 : v <= -32768 ? -32768 : v;
  return (v + (v >= 0 ? 0.5 : -0.5)) | 0;
}

/** The sample rates libopus encodes and decodes at. */
export const OPUS_SAMPLE_RATES = [8000, 12000, 16000, 24000, 48000] as const;
/** libopus application codes by name. */
export const OPUS_APPLICATION_CODES = { voip: 2048, audio: 2049, lowdelay: 2051 } as const;

const BACKEND_RATES: readonly number[] = OPUS_SAMPLE_RATES;
const BACKEND_APPLICATIONS: readonly number[] = Object.values(OPUS_APPLICATION_CODES);

/**
 * The arguments every backend takes (RFC 6716 rates, 1 or 2 channels, libopus's application
 * codes), checked before libopus sees them: a backend is reachable directly (`nativeOpusBackend()`
 * of voicewire/node), and libopus answers anything else with an abort or a raw addon error.
 */
export function checkBackendArgs(sampleRate: unknown, channels: unknown, application?: unknown): void {
  if (!BACKEND_RATES.includes(sampleRate as number)) throw new VoicewireError('INVALID_ARGUMENT', `Opus backend: sampleRate must be one of ${BACKEND_RATES.join(', ')}, got ${describeValue(sampleRate)}`);
  if (channels !== 1 && channels !== 2) throw new VoicewireError('INVALID_ARGUMENT', `Opus backend: channels must be 1 or 2, got ${describeValue(channels)}`);
  if (application !== undefined && !BACKEND_APPLICATIONS.includes(application as number)) {
    throw new VoicewireError('INVALID_ARGUMENT', `Opus backend: application must be 2048, 2049 or 2051, got ${describeValue(application)}`);
  }
}
