/**
 * Node streams for NDJSON: a decoder Transform (bytes in, values out in object mode) and an
 * encoder Transform (values in, UTF-8 lines out) over the platform-neutral core in `../ndjson.ts`.
 */
import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';
import {
  createNdjsonDecoder,
  encodeNdjsonLineBytes,
  type NdjsonDecoder,
  type NdjsonDecoderOptions,
  type NdjsonErrorDetails,
} from '../text/ndjson.js';
import type { VoicewireError } from '../util/errors.js';
import { nodeStreamOptions } from './stream-options.js';

/** Options of {@link NdjsonDecoderTransform}: the decoder's, plus Node's stream options. */
export interface NdjsonDecoderTransformOptions
  extends NdjsonDecoderOptions,
    Omit<TransformOptions, 'transform' | 'flush' | 'objectMode' | 'readableObjectMode' | 'writableObjectMode'> {}

/**
 * NDJSON decoder as a Node Transform: write bytes (Buffers, Uint8Arrays or strings), read values.
 * On an error the values decoded from the failing chunk are pushed first, then the stream errors
 * with the VoicewireError. A line holding JSON `null` is skipped: a Node object stream cannot carry
 * `null` (it would end the stream).
 */
export class NdjsonDecoderTransform<T = unknown> extends Transform {
  readonly decoder: NdjsonDecoder<T>;

  constructor(options?: NdjsonDecoderTransformOptions) {
    const { maxLineLength, streamError, fatal, reviver, ...streamOptions } = nodeStreamOptions(options, 'NdjsonDecoderTransform options');
    super({ ...streamOptions, readableObjectMode: true, writableObjectMode: false });
    const decoderOptions: NdjsonDecoderOptions = {};
    if (maxLineLength !== undefined) decoderOptions.maxLineLength = maxLineLength;
    if (streamError !== undefined) decoderOptions.streamError = streamError;
    if (fatal !== undefined) decoderOptions.fatal = fatal;
    if (reviver !== undefined) decoderOptions.reviver = reviver;
    this.decoder = createNdjsonDecoder<T>(decoderOptions);
  }

  override _transform(chunk: Uint8Array | string, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.run(() => this.decoder.push(chunk), callback);
  }

  override _flush(callback: TransformCallback): void {
    this.run(() => this.decoder.flush(), callback);
  }

  private run(step: () => T[], callback: TransformCallback): void {
    let values: T[];
    try {
      values = step();
    } catch (err) {
      const details = (err as VoicewireError).details as NdjsonErrorDetails | undefined;
      this.pushAll((details?.events ?? []) as T[]);
      callback(err as Error);
      return;
    }
    this.pushAll(values);
    callback();
  }

  private pushAll(values: readonly T[]): void {
    for (const v of values) if (v !== null) this.push(v);
  }
}

/** Creates an {@link NdjsonDecoderTransform}. Defaults as {@link createNdjsonDecoder}. */
export function createNdjsonDecoderTransform<T = unknown>(options?: NdjsonDecoderTransformOptions): NdjsonDecoderTransform<T> {
  return new NdjsonDecoderTransform<T>(options);
}

/**
 * NDJSON encoder as a Node Transform: write values (object mode), read UTF-8 lines. A value JSON
 * cannot represent errors the stream with `INVALID_ARGUMENT`.
 */
export function createNdjsonEncoderTransform(
  options?: Omit<TransformOptions, 'transform' | 'flush' | 'objectMode' | 'readableObjectMode' | 'writableObjectMode'>,
): Transform {
  return new Transform({
    ...nodeStreamOptions(options, 'createNdjsonEncoderTransform options'),
    writableObjectMode: true,
    readableObjectMode: false,
    transform(value: unknown, _encoding, callback) {
      try {
        callback(null, encodeNdjsonLineBytes(value));
      } catch (err) {
        callback(err as Error);
      }
    },
  });
}
