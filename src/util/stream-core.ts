/**
 * The shape every incremental core has, so one adapter serves them all: `push` takes a chunk and
 * returns what is ready, `flush` ends the input and returns the rest. Cores are synchronous and
 * pure; transports (Node streams, web streams, sockets) sit on top.
 */
import { functionArg, objectArg } from './args.js';

export interface Incremental<In, Out> {
  push(chunk: In): readonly Out[];
  flush(): readonly Out[];
}

/** `core` when it has the {@link Incremental} methods (push and flush); else `INVALID_ARGUMENT` naming `what`. */
export function incrementalArg<T extends { push: (...args: never[]) => unknown; flush: () => unknown }>(core: T, what: string): T {
  objectArg(core, what);
  functionArg(core.push, `${what}.push`);
  functionArg(core.flush, `${what}.flush`);
  return core;
}
