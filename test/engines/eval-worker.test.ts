/**
 * The engines' CommonJS worker source runs even when the parent was started as ESM source
 * (`node --input-type=module -e`), whose flag a worker inherits: sherpa-onnx's pool failed to start
 * there before (found with the espeak thread, issue 25).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('evalWorker', () => {
  it('runs CommonJS source under a parent started with --input-type=module', () => {
    const module = fileURLToPath(new URL('../../src/engines/eval-worker.ts', import.meta.url));
    const script = `import { evalWorker } from ${JSON.stringify(module)};
      const w = evalWorker("require('node:worker_threads').parentPort.postMessage(typeof require)");
      w.on('message', (m) => { console.log('worker sees require:', m); void w.terminate(); });
      w.on('error', (e) => { console.log('worker failed:', e.message); process.exitCode = 1; });`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 60_000, encoding: 'utf8' });
    expect(out.trim()).toBe('worker sees require: function');
  }, 90_000);
});
