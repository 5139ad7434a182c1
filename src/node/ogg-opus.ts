/**
 * Node Transform streams for Ogg Opus: PCM bytes → Ogg pages, and Ogg Opus bytes → PCM bytes
 * (s16le, or f32le with `sampleFormat: 'float32'`). In object mode (`readableObjectMode`) the
 * decoder emits Int16Array/Float32Array chunks instead of bytes. The libopus instance is freed
 * when the stream ends, errors or is destroyed.
 */
import type { TransformCallback } from 'node:stream';
import { OggOpusDecoder, OggOpusEncoder, type OggOpusDecoderOptions, type OggOpusEncoderInput, type OggOpusEncoderOptions, type OggOpusPcm, type OggOpusSampleFormat } from '../audio/ogg-opus.js';
import { CoreTransform, type NodeTransformOptions } from './transform.js';
import { nodeStreamOptions } from './stream-options.js';

/** A CoreTransform whose core holds a libopus instance: freed on end, error and destroy. */
class OpusCoreTransform<In, Out> extends CoreTransform<In, Out> {
  constructor(
    private readonly owner: { push(chunk: In): readonly Out[]; flush(): readonly Out[]; destroy(): void },
    options: NodeTransformOptions,
  ) {
    super(owner, options);
  }

  override _transform(chunk: In, encoding: BufferEncoding, callback: TransformCallback): void {
    super._transform(chunk, encoding, (err?: Error | null) => {
      if (err) this.owner.destroy();
      callback(err);
    });
  }

  override _flush(callback: TransformCallback): void {
    super._flush((err?: Error | null) => {
      this.owner.destroy();
      callback(err);
    });
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.owner.destroy();
    callback(err);
  }
}

/**
 * A Node Transform: PCM in (Buffers of s16le, or f32le with `inputEncoding: 'f32le'`; typed
 * arrays in `writableObjectMode`), Ogg Opus pages out as Buffers, header pages first.
 */
export function createOggOpusEncoderTransform(options?: OggOpusEncoderOptions, streamOptions?: NodeTransformOptions): CoreTransform<OggOpusEncoderInput, Uint8Array> {
  // Stream options first: a refusal after the encoder exists would leak its libopus instance.
  const checked = nodeStreamOptions(streamOptions, 'createOggOpusEncoderTransform stream options');
  return new OpusCoreTransform(new OggOpusEncoder(options), checked);
}

/**
 * A Node Transform: Ogg Opus bytes in, PCM out (s16le or f32le bytes; typed arrays with
 * `readableObjectMode: true`). Errors are the {@link OggOpusDecoder}'s: a damaged stream emits
 * the audio before the damage, then errors (`OGG_CRC_MISMATCH`, `OGG_CORRUPT`,
 * `OGG_SEQUENCE_GAP`); a truncated one (cut inside a page, or no EOS page) emits everything
 * complete, then errors with `OGG_TRUNCATED` unless `allowTruncated`. When resampling, the
 * resampler's last samples are then in the error's `details.pcm` (a stream cannot emit them).
 */
export function createOggOpusDecoderTransform<F extends OggOpusSampleFormat = 'int16'>(
  options?: OggOpusDecoderOptions<F>,
  streamOptions?: NodeTransformOptions,
): CoreTransform<Uint8Array, OggOpusPcm<F>> {
  const checked = nodeStreamOptions(streamOptions, 'createOggOpusDecoderTransform stream options');
  return new OpusCoreTransform(new OggOpusDecoder<F>(options), checked);
}
