/**
 * A worker thread running CommonJS source given as a string (the package stays one bundle, ESM and
 * CommonJS alike). The engines' model and synthesis workers are made here.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts `source` as a CommonJS worker. The parent's flags are handed down except the ones that
 * would make the source ESM: a parent run as `node --input-type=module -e …` (or with
 * `--experimental-default-type=module`) otherwise failed to start every engine worker.
 */
export function evalWorker(source: string, options: Omit<WorkerOptions, 'eval' | 'execArgv'> = {}): Worker {
  const execArgv = process.execArgv.filter((a) => !/^--(input-type|experimental-default-type)\b/.test(a));
  return new Worker(source, { ...options, eval: true, execArgv });
}
