/**
 * `voicewire serve --workers N`: N worker processes sharing one port through Node's `cluster`
 * (the primary accepts connections and hands them to the workers round-robin), so one machine's
 * cores all serve. The primary runs no server: it bootstraps the store once, forks the workers,
 * prints the `listening on` line once every worker is bound, replaces a worker that dies
 * unexpectedly, and on SIGTERM/SIGINT forwards SIGTERM to every worker (each drains as a single
 * `serve` does) and exits 0 once all have exited 0.
 *
 * What a worker holds is per process (live sessions, the per-key connection limit, metrics); what
 * must be shared lives in the store (README "Many instances"), so `--store memory:` is refused.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';

/** A worker that dies this soon after its fork is not replaced (a crash loop, e.g. a bad flag). */
const MIN_WORKER_LIFE_MS = 5000;

/** Whether this process is a worker forked by {@link runPrimary}. */
export function isServeWorker(): boolean {
  return cluster.isWorker;
}

/** A worker that has drained closes its channel to the primary, so its process can exit. */
export function leaveCluster(): void {
  cluster.worker?.disconnect();
}

/**
 * Runs the primary: forks `workers` workers (each re-runs this command line), resolves with the
 * exit code once they have all stopped after a signal, or 1 when one fails at start.
 */
export function runPrimary(workers: number, host: string, log: Logger): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    let announced = false;
    let failed = false;
    const born = new Map<Worker, number>();
    const fork = (): void => {
      const w = cluster.fork();
      born.set(w, Date.now());
    };
    const finishIfDone = (): void => {
      if (Object.keys(cluster.workers ?? {}).length === 0) resolve(failed ? 1 : 0);
    };
    const bound = new Set<Worker>();
    cluster.on('listening', (w, address) => {
      bound.add(w);
      if (announced || bound.size < workers) return;
      announced = true;
      const shown = host.includes(':') ? `[${host}]` : host;
      process.stdout.write(`listening on http://${shown}:${address.port}/api\n`);
    });
    cluster.on('exit', (w, code, signal) => {
      const life = Date.now() - (born.get(w) ?? 0);
      born.delete(w);
      bound.delete(w);
      if (stopping) {
        if (code !== 0) failed = true;
        log.info({ pid: w.process.pid, code, signal }, 'worker stopped');
        finishIfDone();
        return;
      }
      log.error({ pid: w.process.pid, code, signal }, 'worker died');
      if (life < MIN_WORKER_LIFE_MS) {
        // Failing at start (bad store URL, port taken): replacing it would loop; stop everything.
        failed = true;
        stop('worker failed at start');
        return;
      }
      fork();
    });
    const stop = (why: string): void => {
      if (stopping) return;
      stopping = true;
      log.info({ why, workers: Object.keys(cluster.workers ?? {}).length }, 'draining workers');
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
      finishIfDone();
    };
    // `on`, not `once`: a second signal during the drain must not kill the primary under its workers.
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    for (let i = 0; i < workers; i++) fork();
  });
}
