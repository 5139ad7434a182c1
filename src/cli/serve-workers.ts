/**
 * `voicewire serve --workers N`: N worker processes sharing one port through Node's `cluster`, so
 * one machine's cores all serve. The workers accept from the one listening socket themselves
 * (`SCHED_NONE`, ./worker-scheduling.ts): the primary is out of every connection's path. The
 * primary runs no server: it bootstraps the store once, forks the workers,
 * prints the `listening on` line once every worker is bound, replaces a worker that dies
 * unexpectedly, and on SIGTERM/SIGINT forwards SIGTERM to every worker (each drains as a single
 * `serve` does) and exits 0 once all have exited 0.
 *
 * What a worker holds is per process (live sessions, the per-key connection limit); what must be
 * shared lives in the store (README "Many instances"), so `--store memory:` is refused. /metrics
 * is the cluster's: the worker a scrape reaches asks the primary, which collects every worker's
 * registry with prom-client's AggregatorRegistry (counters and histograms summed).
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { VoicewireError } from '../util/errors.js';
import { chooseScheduling } from './worker-scheduling.js';

const METRICS_REQ = 'voicewire:metrics-req';
const METRICS_RES = 'voicewire:metrics-res';
/** How long a worker waits for the cluster's metrics before its scrape fails (503). */
const METRICS_TIMEOUT_MS = 5000;

interface MetricsMessage {
  type: string;
  id: number;
  text?: string;
  error?: string;
}
const isMetricsMessage = (m: unknown, type: string): m is MetricsMessage => typeof m === 'object' && m !== null && (m as MetricsMessage).type === type;

/** A worker that dies this soon after its fork is not replaced (a crash loop, e.g. a bad flag). */
const MIN_WORKER_LIFE_MS = 5000;

/** Whether this process is a worker forked by {@link runPrimary}. */
export function isServeWorker(): boolean {
  return cluster.isWorker;
}

/** In a worker: answers the primary's requests for this worker's metrics (`registry`'s). */
export function shareMetrics(registry: Registry): void {
  new AggregatorRegistry(); // its constructor adds the worker's listener
  AggregatorRegistry.setRegistries([registry]);
}

let nextMetricsRequest = 0;

/** In a worker: the whole cluster's metrics, in Prometheus text, from the primary. */
export function clusterMetricsText(): Promise<string> {
  return new Promise((resolve, reject) => {
    const id = nextMetricsRequest++;
    const onMessage = (message: unknown): void => {
      if (!isMetricsMessage(message, METRICS_RES) || message.id !== id) return;
      settle();
      if (message.text !== undefined) resolve(message.text);
      else reject(new VoicewireError('PROTOCOL_INTERNAL', `cluster metrics: ${message.error ?? 'no answer'}`));
    };
    const timer = setTimeout(() => {
      settle();
      reject(new VoicewireError('PROTOCOL_INTERNAL', `cluster metrics: the primary did not answer within ${METRICS_TIMEOUT_MS} ms`));
    }, METRICS_TIMEOUT_MS);
    const settle = (): void => {
      clearTimeout(timer);
      process.off('message', onMessage);
    };
    process.on('message', onMessage);
    process.send!({ type: METRICS_REQ, id });
  });
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
    const aggregator = new AggregatorRegistry();
    cluster.on('message', (w, message: unknown) => {
      if (!isMetricsMessage(message, METRICS_REQ)) return;
      aggregator.clusterMetrics().then(
        (text) => w.send({ type: METRICS_RES, id: message.id, text }),
        (err: unknown) => w.send({ type: METRICS_RES, id: message.id, error: (err as Error).message }),
      );
    });
    chooseScheduling();
    for (let i = 0; i < workers; i++) fork();
  });
}
