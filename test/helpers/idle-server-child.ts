/**
 * A voicewire server in a process of its own, for measuring what an idle session retains (issue
 * 22): run with `node --expose-gc --import tsx test/helpers/idle-server-child.ts`. It serves the
 * tone engines on 127.0.0.1:0 with a memory store, no per-key or per-address connection limit, and
 * logs nowhere (log lines are the logger's, not a session's); with `--bare`, the bare ws server of
 * bench/bare-ws-server.ts instead. Prints one line `listening <ws base> <api key>` (the bare
 * server: `listening on <http base>`), then answers commands on stdin, one JSON line each on stdout:
 *
 * - `measure`: a full GC (three passes: weak references and finalizers need more than one), then
 *   `{"heapUsed","heapTotal","external","arrayBuffers","rss"}` in bytes;
 * - `snapshot <file>`: a heap snapshot written to `<file>` (node:v8 writeHeapSnapshot, after a GC),
 *   then `{"file"}`.
 */
import { createInterface } from 'node:readline';
import { writeHeapSnapshot } from 'node:v8';
import { createVoiceServer } from '../../src/server/server.js';
import { MemoryStore } from '../../src/server/store/memory-store.js';
import { bootstrap } from '../../src/server/bootstrap.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  process.stderr.write('idle-server-child: run with --expose-gc\n');
  process.exit(2);
}
const fullGc = (): void => {
  for (let i = 0; i < 3; i++) gc();
};

let close: () => Promise<void>;
if (process.argv.includes('--bare')) {
  // The limit bench/limit.ts compares with (bench/bare-ws-server.ts): it prints its own
  // `listening on http://…` line, and stops on SIGTERM.
  await import('../../bench/bare-ws-server.js');
  close = async () => void process.kill(process.pid, 'SIGTERM');
} else {
  const store = new MemoryStore();
  const boot = await bootstrap(store);
  const server = await createVoiceServer({
    tts: 'tone',
    stt: 'tone',
    store,
    pageDir: null,
    logDestination: { write: () => undefined },
    limits: { connectionsPerKey: 1_000_000, connectionsPerAddress: 1_000_000 },
  });
  const { port } = await server.listen(0, '127.0.0.1');
  process.stdout.write(`listening ws://127.0.0.1:${port}/api ${boot!.apiKey}\n`);
  close = () => server.close();
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const [cmd, arg] = line.trim().split(' ');
  if (cmd === 'measure') {
    fullGc();
    const m = process.memoryUsage();
    process.stdout.write(`${JSON.stringify({ heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss })}\n`);
  } else if (cmd === 'snapshot' && arg !== undefined) {
    fullGc();
    process.stdout.write(`${JSON.stringify({ file: writeHeapSnapshot(arg) })}\n`);
  }
});
lines.on('close', () => {
  void close().then(() => process.exit(0));
});
