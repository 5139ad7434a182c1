/**
 * Web `TransformStream` adapter over any {@link Incremental} core. Works in browsers, Deno and
 * Node >= 18 (global TransformStream). A thrown VoicewireError errors the stream.
 */
import { functionArg, objectArg, optionsArg } from './args.js';
import type { Incremental } from './stream-core.js';

/** Options of {@link toWebTransformStream}: queuing strategies for the two sides. */
export interface WebTransformOptions<In, Out> {
  writableStrategy?: QueuingStrategy<In>;
  readableStrategy?: QueuingStrategy<Out>;
}

/** Wraps an incremental core as a web TransformStream; backpressure is the platform's. */
export function toWebTransformStream<In, Out>(
  core: Incremental<In, Out>,
  options: WebTransformOptions<In, Out> = {},
): TransformStream<In, Out> {
  objectArg(core, 'toWebTransformStream: core');
  functionArg(core.push, 'toWebTransformStream: core.push');
  functionArg(core.flush, 'toWebTransformStream: core.flush');
  options = optionsArg(options, 'toWebTransformStream: options');
  return new TransformStream<In, Out>(
    {
      transform(chunk, controller) {
        for (const out of core.push(chunk)) controller.enqueue(out);
      },
      flush(controller) {
        for (const out of core.flush()) controller.enqueue(out);
      },
    },
    options.writableStrategy,
    options.readableStrategy,
  );
}
