/**
 * Node `Transform` over the 80 ms framer (src/audio/framer.ts): bytes in, one frame per chunk out.
 */
import type { Incremental } from '../util/stream-core.js';
import { createFramer, type Framer, type FramerOptions } from '../audio/framer.js';
import { CoreTransform, type NodeTransformOptions } from './transform.js';
import { nodeStreamOptions } from './stream-options.js';

/** Options of {@link createFramerTransform}: Node stream options besides the framer's. */
export interface FramerTransformOptions extends NodeTransformOptions {
  /**
   * `true` (default): the readable side is in object mode and each chunk read is exactly one
   * frame, as a `Buffer` (a zero-copy view when the frame lies inside one written chunk).
   * `false`: a byte stream, where consumers that `read(n)` may see frames merged.
   */
  readableObjectMode?: boolean;
}

/** Wraps a framer so that frames come out as Buffers (views, no copy). */
function asBuffers(framer: Framer): Incremental<Uint8Array, Buffer> {
  const toBuffer = (f: Uint8Array): Buffer => Buffer.from(f.buffer, f.byteOffset, f.byteLength);
  return {
    push: (chunk) => framer.push(chunk).map(toBuffer),
    flush: () => framer.flush().map(toBuffer),
  };
}

/** The Node Transform of the framer; `framer` exposes `buffered`, `delay` and `reset()`. */
export class FramerTransform extends CoreTransform<Uint8Array, Buffer> {
  /** The underlying framer (call `framer.reset()` on barge-in). */
  readonly framer: Framer;

  constructor(options: FramerOptions, streamOptions?: FramerTransformOptions) {
    streamOptions = nodeStreamOptions(streamOptions, 'FramerTransform stream options');
    const framer = createFramer(options);
    const readableObjectMode = streamOptions.readableObjectMode ?? true;
    super(asBuffers(framer), { ...streamOptions, readableObjectMode });
    this.framer = framer;
  }
}

/**
 * A Node Transform that cuts a byte stream into frames of exactly
 * `frameSamples * bytesPerSample * channels` bytes (see `createFramer`); the final partial frame
 * is zero-padded by default. Backpressure is Node's: with the default object-mode readable side
 * (highWaterMark 16 frames), a slow consumer pauses the writer, so memory stays bounded by the
 * two highWaterMarks plus the frames of one written chunk.
 *
 * Frames that lie inside one written chunk alias it: do not reuse a Buffer after writing it.
 *
 * ```ts
 * import { createFramerTransform, STT_FRAME } from 'voicewire/node';
 * pipeline(micStream, createFramerTransform(STT_FRAME), sendEachFrame, cb);
 * ```
 */
export function createFramerTransform(options: FramerOptions, streamOptions?: FramerTransformOptions): FramerTransform {
  return new FramerTransform(options, streamOptions);
}
