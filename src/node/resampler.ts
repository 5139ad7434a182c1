/**
 * Node Transform over the streaming resampler: little-endian PCM bytes in, the same encoding out
 * (`s16le` or `f32le`), interleaved channels. Chunks may end anywhere, even inside a sample: the
 * partial sample's bytes wait for the next chunk. Backpressure is Node's own (Transform).
 */
import { float32View, int16View } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { createInt16Resampler, createResampler, type Resampler, type ResamplerOptions } from '../audio/resampler.js';
import type { Incremental } from '../util/stream-core.js';
import { CoreTransform, type NodeTransformOptions } from './transform.js';
import { objectArg, optionsArg, shown } from '../util/args.js';

/** PCM byte encodings the resampler Transform reads and writes. */
export type ResamplerPcmEncoding = 's16le' | 'f32le';

/** Options of {@link createResamplerTransform}. */
export interface ResamplerTransformOptions extends ResamplerOptions {
  /** Encoding of the bytes in and out: `'s16le'` (default) or `'f32le'`. */
  encoding?: ResamplerPcmEncoding;
  /** Node stream options (highWaterMark…); object modes are not allowed: this is a byte stream. */
  stream?: Omit<NodeTransformOptions, 'objectMode' | 'readableObjectMode' | 'writableObjectMode'>;
}

/**
 * The byte-level incremental core: holds back the bytes of a partial sample, views the rest as
 * samples (a copy only when the chunk's offset is misaligned), and resamples them.
 */
export function resamplerByteCore(options: ResamplerTransformOptions): Incremental<Uint8Array, Int16Array | Float32Array> & { readonly resampler: Resampler<Int16Array> | Resampler<Float32Array> } {
  const encoding = objectArg(options, 'resampler transform options').encoding ?? 's16le';
  if (encoding !== 's16le' && encoding !== 'f32le') {
    throw new VoicewireError('INVALID_ARGUMENT', `resampler transform: encoding must be 's16le' or 'f32le', got ${shown(encoding)}`);
  }
  const width = encoding === 's16le' ? 2 : 4;
  const r16 = encoding === 's16le' ? createInt16Resampler(options) : null;
  const r32 = encoding === 'f32le' ? createResampler(options) : null;
  const carry = new Uint8Array(width);
  let carried = 0;

  const run = (bytes: Uint8Array): Int16Array | Float32Array => (r16 !== null ? r16.push(int16View(bytes)) : r32!.push(float32View(bytes)));
  const emit = (out: Int16Array | Float32Array, into: (Int16Array | Float32Array)[]): void => {
    if (out.length > 0) into.push(out);
  };

  return {
    resampler: (r16 ?? r32)!,
    push(chunk: Uint8Array): readonly (Int16Array | Float32Array)[] {
      if (!(chunk instanceof Uint8Array)) {
        throw new VoicewireError('INVALID_ARGUMENT', 'resampler transform: chunks must be bytes (Buffer or Uint8Array)');
      }
      const outs: (Int16Array | Float32Array)[] = [];
      let at = 0;
      if (carried > 0) {
        const k = Math.min(width - carried, chunk.byteLength);
        carry.set(chunk.subarray(0, k), carried);
        carried += k;
        at = k;
        if (carried < width) return outs;
        carried = 0;
        emit(run(carry), outs);
      }
      const whole = Math.floor((chunk.byteLength - at) / width) * width;
      if (whole > 0) emit(run(chunk.subarray(at, at + whole)), outs);
      at += whole;
      if (at < chunk.byteLength) {
        carry.set(chunk.subarray(at), 0);
        carried = chunk.byteLength - at;
      }
      return outs;
    },
    flush(): readonly (Int16Array | Float32Array)[] {
      if (carried > 0) {
        const got = carried;
        carried = 0;
        (r16 ?? r32)!.reset();
        throw new VoicewireError('PCM_PARTIAL_SAMPLE', `resampler transform: the input ended inside a sample (${got} of ${width} bytes)`);
      }
      const outs: (Int16Array | Float32Array)[] = [];
      emit((r16 ?? r32)!.flush(), outs);
      return outs;
    },
  };
}

/**
 * A Node Transform that resamples little-endian PCM bytes (`s16le` by default, or `f32le`;
 * interleaved when `channels > 1`) and emits bytes of the same encoding. The output equals
 * one-shot resampling of the whole input, whatever the chunking; the added latency is the
 * resampler's `delay` (see {@link createResampler}).
 *
 * @example
 * source.pipe(createResamplerTransform({ from: 48000, to: 8000 })).pipe(sink);
 */
export function createResamplerTransform(options: ResamplerTransformOptions): CoreTransform<Uint8Array, Int16Array | Float32Array> {
  const core = resamplerByteCore(options);
  return new CoreTransform(core, options.stream === undefined ? {} : { ...optionsArg(options.stream, 'resampler transform stream options') });
}
