/**
 * Node `Transform` adapter over any {@link Incremental} core: `_transform` calls `push`,
 * `_flush` calls `flush`, a throw becomes `callback(err)`. Backpressure is Node's own.
 */
import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';
import { incrementalArg, type Incremental } from '../util/stream-core.js';
import { bytesOf } from '../util/bytes.js';
import { nodeStreamOptions } from './stream-options.js';

/** Options of {@link toNodeTransform}. */
export interface NodeTransformOptions extends Omit<TransformOptions, 'transform' | 'flush'> {
  /** Emit objects (events, messages, frames as typed arrays) instead of bytes. Default false. */
  readableObjectMode?: boolean;
  /** Accept objects instead of bytes. Default false. */
  writableObjectMode?: boolean;
}

/** A Node Transform over an incremental core. In byte mode, typed-array output is sent as its bytes. */
export class CoreTransform<In, Out> extends Transform {
  readonly core: Incremental<In, Out>;
  private readonly bytesOut: boolean;

  constructor(core: Incremental<In, Out>, options?: NodeTransformOptions) {
    options = nodeStreamOptions(options, 'CoreTransform options');
    incrementalArg(core, 'CoreTransform core');
    super(options);
    this.core = core;
    this.bytesOut = !options.readableObjectMode && !options.objectMode;
  }

  override _transform(chunk: In, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.emitAll(this.core.push(chunk));
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.emitAll(this.core.flush());
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  private emitAll(outs: readonly Out[]): void {
    for (const out of outs) {
      if (this.bytesOut && ArrayBuffer.isView(out)) {
        if (out.byteLength > 0) this.push(bytesOf(out));
      } else {
        this.push(out);
      }
    }
  }
}

/** Wraps an incremental core as a Node Transform. */
export function toNodeTransform<In, Out>(core: Incremental<In, Out>, options?: NodeTransformOptions): CoreTransform<In, Out> {
  return new CoreTransform(core, options);
}
