/**
 * Faults: signals on a real `voicewire serve` process (issue 16 "Faults"). SIGTERM with 100 live
 * sessions: every one finishes with end_of_stream, the process exits 0. SIGKILL in the middle of
 * debits on a SQLite store: after a restart no credit is lost or double-spent
 * (remaining + recorded usage == allocated).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type WsConversation } from '../harness.js';
import { SqliteStore } from '../../../src/server/store/sqlite-store.js';
import { SQLITE_FILE_NAME } from '../../../src/server/store/open.js';
import { cli } from '../instances/serve-process.js';

const root = join(import.meta.dirname, '../../..');
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Served {
  child: ChildProcess;
  base: string;
  keys: string[];
  exited: Promise<number | null>;
}

/** Spawns `voicewire serve --tts tone --stt tone` on a free loopback port (killed after the test). */
function spawnServe(env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), 'serve', '--tts', 'tone', '--stt', 'tone'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, VOICEWIRE_PORT: '0', VOICEWIRE_LOG_LEVEL: 'warn', ...env },
  });
  children.push(child);
  return child;
}

/** Starts `voicewire serve --tts tone --stt tone` on a free loopback port; resolves once it listens. */
async function serve(env: Record<string, string>): Promise<Served> {
  const child = spawnServe(env);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/api)\n/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    void exited.then(() => reject(new Error(`exited early: ${stderr}`)));
  });
  const keys = [/^API key \(x-api-key\): (\S+)$/m.exec(stdout)?.[1], /^instance-admin key[^:]*: (\S+)$/m.exec(stdout)?.[1]].filter((k): k is string => k !== undefined);
  return { child, base, keys, exited };
}

describe('process signals', { timeout: 60_000 }, () => {
  it('SIGTERM with 100 live TTS sessions: every one finishes with end_of_stream, exit 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vw-sigterm-'));
    dirs.push(dir);
    const s = await serve({ VOICEWIRE_DATA: dir });
    expect(s.keys).toHaveLength(2); // the organization's key and the instance-admin key
    // 50 per key: the default connections-per-key limit. The instance-admin key speaks for no
    // organization, so the second key is another of `default`'s, made beside the running server.
    const speakers = [s.keys[0]!, cli(['keys', 'create', '--data', dir]).trim()];
    const wsBase = s.base.replace('http', 'ws');
    const live: WsConversation[] = Array.from({ length: 100 }, (_, i) => {
      const c = connect(`${wsBase}/speech/tts`, { 'x-api-key': speakers[i % 2]! });
      c.send({ type: 'setup', output_format: 'pcm' });
      c.send({ type: 'text', text: `session ${i} is speaking` });
      return c;
    });
    await Promise.all(live.map((c) => c.waitFor((m) => m['type'] === 'audio')));
    s.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    expect((await fetch(`${s.base}/readyz`)).status).toBe(503);
    for (const c of live) {
      c.send({ type: 'text', text: 'and finishes' });
      c.send({ type: 'end_of_stream' });
    }
    const closes = await Promise.all(live.map((c) => c.closed));
    expect(closes.map((c) => c.code)).toEqual(Array(100).fill(1000));
    for (const c of live) {
      expect(c.messages.at(-1)).toEqual({ type: 'end_of_stream' });
      expect(c.messages.filter((m) => m['type'] === 'text').map((m) => m['text'])).toContain('finishes');
    }
    expect(await s.exited).toBe(0);
  });

  it('SIGTERM as soon as a line is read (the first-start keys, or `listening on`): the server drains and exits 0, never dies undrained', { timeout: 240_000 }, async () => {
    // Before the fix the listeners were added after `listening on` was written: a SIGTERM during
    // start-up, or sent on reading that line, met node's default and ended the process (exit by
    // signal, no drain; in the issue-25 runs one such stop hung a test for 60 s).
    const stopOn = async (pattern: RegExp, env: Record<string, string>): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }> => {
      const child = spawnServe(env);
      let stdout = '';
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      child.stdout!.on('data', (d: Buffer) => {
        const before = stdout;
        stdout += d.toString();
        if (!pattern.test(before) && pattern.test(stdout)) child.kill('SIGTERM');
      });
      return { ...(await exited), stdout };
    };
    for (let i = 0; i < 2; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'vw-sigterm-start-'));
      dirs.push(dir);
      // The keys are printed before the engines and the port are set up: the signal comes mid start-up.
      const early = await stopOn(/^API key/m, { VOICEWIRE_DATA: dir });
      expect(early).toEqual({ code: 0, signal: null, stdout: expect.stringMatching(/listening on/) });
    }
    for (let i = 0; i < 3; i++) {
      const onListening = await stopOn(/listening on .*\n/, { VOICEWIRE_STORE: 'memory:' });
      expect({ code: onListening.code, signal: onListening.signal }).toEqual({ code: 0, signal: null });
    }
  });

  it('SIGKILL during debits on a SQLite store: after restart remaining + recorded usage == allocated', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vw-sigkill-'));
    dirs.push(dir);
    const s = await serve({ VOICEWIRE_DATA: dir });
    const key = s.keys[0]!;
    let completed = 0;
    let stop = false;
    // 16 clients in a loop of 10-character TTS requests (10 credits each) until the kill.
    const clients = Array.from({ length: 16 }, async () => {
      while (!stop) {
        try {
          const r = await fetch(`${s.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key }, body: JSON.stringify({ text: 'abcdefghij', output_format: 'pcm', only_audio: true }) });
          await r.arrayBuffer();
          if (r.status === 200) completed++;
        } catch {
          return;
        }
      }
    });
    await new Promise((r) => setTimeout(r, 1000));
    s.child.kill('SIGKILL');
    await s.exited;
    stop = true;
    await Promise.all(clients);
    expect(completed).toBeGreaterThan(10);

    // Restart on the same file: it opens, and the books balance.
    const again = await serve({ VOICEWIRE_DATA: dir });
    const r = await fetch(`${again.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key }, body: JSON.stringify({ text: 'ok', output_format: 'pcm', only_audio: true }) });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);

    const store = SqliteStore.open(join(dir, SQLITE_FILE_NAME));
    try {
      const org = (await store.getOrganizationByName('default'))!;
      const usage = await store.usageSummary(org.id, '1970-01-01T00:00:00.000Z');
      expect(org.remainingCredits + usage.tts.credits + usage.stt.credits).toBe(org.allocatedCredits);
      // Every request a client saw complete was recorded (+1: the one after the restart), none twice.
      expect(usage.tts.requests).toBeGreaterThanOrEqual(completed + 1);
      expect(usage.tts.credits).toBe(usage.tts.requests * 10 - 8);
    } finally {
      await store.close();
    }
  });
});
