/**
 * The server process of bench/server.bench.ts: `createVoiceServer` with a memory store, the tone
 * engines, warn-level logs, and a per-key connection limit above the bench's 200 clients. Prints
 * `listening on URL KEY` once bound; SIGTERM stops it.
 */
import { createVoiceServer } from '../src/server/server.js';
import { MemoryStore } from '../src/server/store/memory-store.js';
import { bootstrap } from '../src/server/bootstrap.js';
import { pino } from 'pino';

const store = new MemoryStore();
const boot = (await bootstrap(store))!;
// The engines are named: the defaults are espeak and pocketsphinx when installed, and this bench measures the server.
const server = await createVoiceServer({ store, tts: 'tone', stt: 'tone', logger: pino({ level: 'warn' }, pino.destination(2)), limits: { connectionsPerKey: 10_000 } });
const { port } = await server.listen(0, '127.0.0.1');
process.stdout.write(`listening on http://127.0.0.1:${port}/api ${boot.apiKey}\n`);
process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
