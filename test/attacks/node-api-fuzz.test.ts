/// <reference types="vite/client" />
/**
 * Issue 11 §13 for the other public entries: what `voicewire/node` adds to the core (Node
 * Transforms and Duplexes, the ffmpeg bridge, the ws session helpers, the native Opus hooks) and
 * the client SDK (`voicewire/client`, through the Node `createClient`), under the same random
 * argument shapes as the core (see api-fuzz.test.ts): only VoicewireErrors, never a hang.
 *
 * The client talks to nothing: its `fetch` fails the way undici does when a connection is refused
 * (a TypeError, which the SDK must turn into its own error), and its WebSocket factory hands back a
 * socket that fails to open. Node's own stream methods (write, pipe) are Node's to check and are
 * not called; every stream made is destroyed, so no ffmpeg child outlives the test.
 */
import { describe, expect, it } from 'vitest';
import * as core from '../../src/index.js';
import * as nodeApi from '../../src/node/index.js';
import { createClient } from '../../src/node/index.js';
import type { WebSocketLike } from '../../src/client/socket.js';
import { entriesOf, fuzzContext, fuzzEntries, fuzzMembers, RUNS, type FuzzTarget } from '../helpers/api-fuzz.js';

const ctx = fuzzContext({
  modules: import.meta.glob(['../../src/{node,client}/*.ts', '!../../src/**/index.ts'], { eager: true }),
  sources: import.meta.glob('../../src/{util,audio,text,pipelines,protocol,sessions,node,client}/*.ts', { eager: true, query: '?raw', import: 'default' }),
});
/** What voicewire/node adds; the core's own exports are fuzzed by api-fuzz.test.ts. */
const added = Object.fromEntries(Object.entries(nodeApi).filter(([name]) => !(name in core)));
const entries = entriesOf(ctx, added);

/** A fetch that fails like undici's on a refused connection. */
const refusedFetch = (() => Promise.reject(new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) }))) as typeof fetch;

/** A WebSocket that fails to open: an error, then a close with 1006, as a refused upgrade is reported. */
function refusedSocket(): WebSocketLike {
  const listeners = new Map<string, ((event: { code?: number; reason?: string; message?: string }) => void)[]>();
  const emit = (type: string, event: { code?: number; reason?: string; message?: string }): void => listeners.get(type)?.forEach((l) => l(event));
  const socket = {
    readyState: 0,
    send: () => undefined,
    close: () => undefined,
    addEventListener: (type: string, listener: (event: object) => void) => listeners.set(type, [...(listeners.get(type) ?? []), listener]),
  };
  setTimeout(() => {
    socket.readyState = 3;
    emit('error', { message: 'connect ECONNREFUSED 127.0.0.1:9' });
    emit('close', { code: 1006, reason: '' });
  }, 1);
  return socket;
}

function clientTargets(): FuzzTarget[] {
  const client = createClient({ baseUrl: 'http://127.0.0.1:9/api', apiKey: 'fuzz', fetch: refusedFetch, webSocket: refusedSocket, retry: { attempts: 1 } });
  const module = 'client/client.ts';
  return [
    { label: 'client', module, value: client },
    { label: 'client.voices', module, value: client.voices },
    { label: 'client.pronunciations', module, value: client.pronunciations },
    { label: 'client.ttsStream()', module, value: client.ttsStream() },
    { label: 'client.sttStream()', module, value: client.sttStream() },
  ];
}

describe('attacks: voicewire/node and the client SDK under random argument shapes (issue 11 §13)', () => {
  it('covers what voicewire/node adds, each attributed to its module', () => {
    expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(['createClient', 'createSttDecodeTransform', 'CoreTransform', 'attachWebSocketSession', 'decodeWithFfmpeg']));
    expect(entries.filter((e) => e.module === '?').map((e) => e.name)).toEqual([]);
  });

  it('entry points: only VoicewireErrors, each call bounded in time', async () => {
    expect(await fuzzEntries(ctx, entries)).toEqual([]);
  }, 240_000);

  it('methods of what they return, and of a client whose server refuses every connection: only VoicewireErrors', async () => {
    const { failures, objects, calls } = await fuzzMembers(ctx, entries, clientTargets());
    expect(objects).toBeGreaterThan(10);
    expect(calls).toBeGreaterThan(10 * RUNS);
    expect(failures).toEqual([]);
  }, 240_000);
});
