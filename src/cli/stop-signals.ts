/**
 * SIGTERM and SIGINT for `serve`, listened to from the start of start-up. Until a listener was
 * added, node's own handler ended the process: a supervisor that sends SIGTERM as soon as it reads
 * `listening on …` could meet the moment before `serve` listened, and lose the drain (issue 25:
 * 2 in 40 such SIGTERMs killed the process undrained; one hung a test for 60 s). A signal that
 * comes before the server is up is kept and handed over once it is (its drain is then immediate);
 * a second one before that ends the process at once, as Ctrl-C twice means.
 */
export type StopSignal = 'SIGTERM' | 'SIGINT';

/** Exit codes of a process ended by a signal (128 + its number), for a stop before start-up ends. */
const SIGNAL_EXIT: Record<StopSignal, number> = { SIGINT: 130, SIGTERM: 143 };

export interface StopSignals {
  /** From now on every signal goes to `handler`; one that came before is handed over at once. */
  handle(handler: (signal: StopSignal) => void): void;
  /** Stops listening (the process's default handling comes back). */
  dispose(): void;
}

/** Starts listening for SIGTERM and SIGINT now. */
export function listenForStop(): StopSignals {
  let handler: ((signal: StopSignal) => void) | undefined;
  let pending: StopSignal | undefined;
  const on = (signal: StopSignal): void => {
    if (handler !== undefined) handler(signal);
    else if (pending === undefined) pending = signal;
    else process.exit(SIGNAL_EXIT[signal]);
  };
  const term = (): void => on('SIGTERM');
  const int = (): void => on('SIGINT');
  process.on('SIGTERM', term);
  process.on('SIGINT', int);
  return {
    handle(h) {
      handler = h;
      const first = pending;
      pending = undefined;
      if (first !== undefined) h(first);
    },
    dispose() {
      process.removeListener('SIGTERM', term);
      process.removeListener('SIGINT', int);
    },
  };
}
