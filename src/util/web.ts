/**
 * Web `TransformStream` adapter over any {@link Incremental} core. Works in browsers, Deno and
 * Node >= 18 (global TransformStream). A thrown VoicewireError errors the stream.
 */
import { describeValue, functionArg, optionsArg } from './args.js';
import { VoicewireError } from './errors.js';
import { incrementalArg, type Incremental } from './stream-core.js';

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
  incrementalArg(core, 'toWebTransformStream: core');
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
    strategyArg(options.writableStrategy, 'toWebTransformStream: writableStrategy'),
    strategyArg(options.readableStrategy, 'toWebTransformStream: readableStrategy'),
  );
}

/** A QueuingStrategy the platform will take (its own checks throw TypeError and RangeError). */
function strategyArg<T>(strategy: QueuingStrategy<T> | undefined, what: string): QueuingStrategy<T> | undefined {
  if (strategy === undefined) return undefined;
  const { highWaterMark, size } = optionsArg(strategy, what) as { highWaterMark?: unknown; size?: unknown };
  if (highWaterMark !== undefined && (typeof highWaterMark !== 'number' || !(highWaterMark >= 0))) {
    throw new VoicewireError('INVALID_ARGUMENT', `${what}: highWaterMark must be a number >= 0, got ${describeValue(highWaterMark)}`);
  }
  if (size !== undefined) functionArg(size, `${what}: size`);
  return strategy;
}
