/**
 * The shape every incremental core has, so one adapter serves them all: `push` takes a chunk and
 * returns what is ready, `flush` ends the input and returns the rest. Cores are synchronous and
 * pure; transports (Node streams, web streams, sockets) sit on top.
 */
export interface Incremental<In, Out> {
  push(chunk: In): readonly Out[];
  flush(): readonly Out[];
}
