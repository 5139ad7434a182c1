/**
 * Node Transform streams for WAV over the platform-neutral cores in `../wav.ts`.
 */
import type { Incremental } from '../util/stream-core.js';
import {
  createWavDecoder,
  createWavStreamEncoder,
  type WavDecoderEvent,
  type WavDecoderOptions,
  type WavFormat,
  type WavSampleOutput,
  type WavSampleTypes,
  type WavStreamEncoderOptions,
} from '../audio/wav.js';
import { CoreTransform, toNodeTransform, type NodeTransformOptions } from './transform.js';
import { objectArg, optionsArg } from '../util/args.js';

/** Options of {@link createWavDecodeTransform}. */
export interface WavDecodeTransformOptions<O extends WavSampleOutput = WavSampleOutput> extends WavDecoderOptions<O>, Omit<NodeTransformOptions, 'readableObjectMode' | 'writableObjectMode'> {
  /**
   * Emit the decoder's {@link WavDecoderEvent} objects (format first, then samples) instead of
   * bytes. Default `false`: the readable side carries the samples' bytes (f32le for `float32`,
   * s16le for `int16`, the file's own bytes for `raw`) and the format arrives as a `'format'`
   * event before the first byte.
   */
  events?: boolean;
}

/**
 * A Node Transform that decodes a WAV byte stream (any chunking, e.g. an HTTP upload).
 *
 * @example
 * fs.createReadStream('in.wav')
 *   .pipe(createWavDecodeTransform({ output: 'int16', mono: true }))
 *   .on('format', (f) => console.log(f.sampleRate, f.channels))
 *   .pipe(sink); // s16le mono bytes
 */
export function createWavDecodeTransform<O extends WavSampleOutput = 'float32'>(options?: WavDecodeTransformOptions<O>): CoreTransform<Uint8Array, unknown> {
  const { output, mono, allowTruncated, events, ...streamOptions } = optionsArg(options, 'createWavDecodeTransform options');
  const decoderOptions: WavDecoderOptions<O> = {};
  if (output !== undefined) decoderOptions.output = output;
  if (mono !== undefined) decoderOptions.mono = mono;
  if (allowTruncated !== undefined) decoderOptions.allowTruncated = allowTruncated;
  const decoder = createWavDecoder(decoderOptions);
  if (events === true) return toNodeTransform<Uint8Array, unknown>(decoder, { ...streamOptions, readableObjectMode: true });
  let transform: CoreTransform<Uint8Array, unknown> | undefined;
  const samplesOnly = (evs: readonly WavDecoderEvent<WavSampleTypes[O]>[]): WavSampleTypes[O][] => {
    const out: WavSampleTypes[O][] = [];
    for (const e of evs) {
      if (e.type === 'format') transform!.emit('format', e.format satisfies WavFormat);
      else out.push(e.samples);
    }
    return out;
  };
  const core: Incremental<Uint8Array, unknown> = {
    push: (chunk) => samplesOnly(decoder.push(chunk)),
    flush: () => samplesOnly(decoder.flush()),
  };
  transform = toNodeTransform(core, streamOptions);
  return transform;
}

/** Options of {@link createWavEncodeTransform}. */
export interface WavEncodeTransformOptions extends WavStreamEncoderOptions, Omit<NodeTransformOptions, 'readableObjectMode' | 'encoding'> {}

/**
 * A Node Transform writing the service's streaming WAV: a 44-byte header with sizes 0xFFFFFFFF,
 * then the PCM. In byte mode (default) the written bytes are PCM already in `encoding`; with
 * `writableObjectMode: true` it also accepts Int16Array / Float32Array chunks and encodes them.
 */
export function createWavEncodeTransform(options: WavEncodeTransformOptions): CoreTransform<Float32Array | Int16Array | Uint8Array, Uint8Array> {
  const { sampleRate, channels, encoding, ...streamOptions } = objectArg(options, 'createWavEncodeTransform options');
  const encoderOptions: WavStreamEncoderOptions = { sampleRate };
  if (channels !== undefined) encoderOptions.channels = channels;
  if (encoding !== undefined) encoderOptions.encoding = encoding;
  return toNodeTransform(createWavStreamEncoder(encoderOptions), streamOptions);
}
