/**
 * `voicewire serve --workers 2` (Node cluster): requests are answered by two different worker
 * processes on one port, the workers accept connections themselves (the primary is not on the
 * path), and SIGTERM to the primary drains every worker (a live session finishes) before it
 * exits 0. The store is a SQLite folder shared by the workers.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { get } from 'node:http';
import { connect as tcp, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, audioBytes } from '../harness.js';
import { cli, startServe, type ServeProcess } from './serve-process.js';

const dir = mkdtempSync(join(tmpdir(), 'vw-workers-'));
let s: ServeProcess | undefined;

afterAll(async () => {
  await s?.stop(5000);
  rmSync(dir, { recursive: true, force: true });
});

/** GET on a fresh connection (no keep-alive: each new connection may reach another worker); fails after `timeoutMs`. */
function getJson(url: string, headers: Record<string, string>, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = get(url, { headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(JSON.parse(body) as Record<string, unknown>));
    }).on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
  });
}

/** The worker pids that answer `/statusz` on fresh connections (up to 40 tries to see `want` of them). */
async function workerPids(base: string, admin: string, want: number): Promise<Set<number>> {
  const pids = new Set<number>();
  for (let i = 0; i < 40 && pids.size < want; i++) pids.add(Number((await getJson(`${base}/statusz`, { 'x-api-key': admin }))['pid']));
  return pids;
}

/** GET text on a fresh connection. */
function getText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode}: ${body}`))));
    }).on('error', reject);
  });
}

describe('serve --workers 2', () => {
  it('two worker pids answer on one port; SIGTERM drains a live session and exits 0', async () => {
    const admin = cli(['keys', 'create', '--admin', '--data', dir]).trim();
    const key = cli(['keys', 'create', '--org', 'ops', '--data', dir]).trim();
    s = await startServe(['--workers', '2', '--data', dir, '--no-bootstrap']);
    const pids = await workerPids(s.base, admin, 2);
    expect(pids.size).toBe(2);
    expect(pids.has(s.child.pid!)).toBe(false); // the primary serves nothing itself

    const live = connect(`${s.wsBase}/speech/tts`, { 'x-api-key': key });
    live.send({ type: 'setup', output_format: 'pcm_16000' });
    live.send({ type: 'text', text: 'before the signal.', flush: true });
    await live.waitFor((m) => m['type'] === 'audio');
    s.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    live.send({ type: 'text', text: 'after it.', flush: true });
    live.send({ type: 'end_of_stream' });
    expect((await live.closed).code).toBe(1000);
    expect(live.messages.at(-1)).toEqual({ type: 'end_of_stream' });
    expect(live.messages.some((m) => m['type'] === 'error')).toBe(false);
    expect(audioBytes(live.messages).length).toBeGreaterThan(0);
    expect(await s.exited).toBe(0);
  }, 60_000);

  it('/metrics is cluster-wide: every scrape, whichever worker answers it, counts the requests of both', async () => {
    const admin = cli(['keys', 'create', '--admin', '--data', dir]).trim();
    const key = cli(['keys', 'create', '--org', 'metrics', '--data', dir]).trim();
    s = await startServe(['--workers', '2', '--data', dir, '--no-bootstrap']);
    // New connections reach both workers (which one takes a connection is the kernel's choice).
    expect((await workerPids(s.base, admin, 2)).size).toBe(2);
    // 6 requests on fresh connections, then 8 scrapes: unless all 14 went to one worker, some
    // scrape reaches a worker whose own registry says less than 6; the cluster's says 6 every time.
    const requests = 6;
    for (let i = 0; i < requests; i++) {
      const r = await fetch(`${s.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key, connection: 'close' }, body: JSON.stringify({ text: 'abc', only_audio: true, output_format: 'pcm' }) });
      await r.arrayBuffer();
    }
    for (let i = 0; i < 8; i++) {
      const text = await getText(s.base.replace('/api', '/metrics'));
      expect(text).toMatch(new RegExp(`voicewire_time_to_first_audio_seconds_count\\{route="tts_post"\\} ${requests}\\b`));
    }
    await s.stop(5000);
    s = undefined;
  }, 60_000);

  it('the workers accept connections themselves: with the primary stopped (SIGSTOP), new connections are still answered', async () => {
    const admin = cli(['keys', 'create', '--admin', '--data', dir]).trim();
    s = await startServe(['--workers', '2', '--data', dir, '--no-bootstrap']);
    const primary = s.child.pid!;
    const before = await workerPids(s.base, admin, 2);
    expect(before.size).toBe(2);
    // Round-robin (Node's default) has the stopped primary accept every connection: no answer.
    process.kill(primary, 'SIGSTOP');
    try {
      const pid = Number((await getJson(`${s.base}/statusz`, { 'x-api-key': admin }, 5000))['pid']);
      expect(before.has(pid)).toBe(true);
    } finally {
      process.kill(primary, 'SIGCONT');
    }
    expect(await s.stop(10_000)).toBe(0);
    s = undefined;
  }, 60_000);

  it('--workers is validated, and memory: is refused with more than one worker', () => {
    expect(() => cli(['serve', '--workers', '0', '--store', 'memory:'])).toThrow(/--workers must be 1 to 256/);
    expect(() => cli(['serve', '--workers', '2', '--store', 'memory:'])).toThrow(/shared store/);
  });

  it('--connections-per-address 2 (and its env variable): a third connection from 127.0.0.1 is closed at once', async () => {
    for (const [args, env] of [
      [['--store', 'memory:', '--connections-per-address', '2'], {}],
      [['--store', 'memory:'], { VOICEWIRE_CONNECTIONS_PER_ADDRESS: '2' }],
    ] as const) {
      s = await startServe([...args], env);
      const port = Number(new URL(s.base).port);
      const open = async (): Promise<{ sock: Socket; closed: Promise<void> }> => {
        const sock = tcp(port, '127.0.0.1');
        sock.on('error', () => {});
        await new Promise<void>((r) => sock.once('connect', () => r()));
        return { sock, closed: new Promise<void>((r) => sock.once('close', () => r())) };
      };
      const held = [await open(), await open()];
      const third = await open();
      const outcome = await Promise.race([third.closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('open'), 2000))]);
      expect(outcome).toBe('closed');
      for (const h of held) h.sock.destroy();
      expect(await s.stop(5000)).toBe(0);
      s = undefined;
    }
  }, 60_000);

  it('--connections-per-address is validated (issue 20: a proxy deployment must be able to raise the cap)', () => {
    for (const bad of ['0', '-1', '1.5', 'many']) expect(() => cli(['serve', `--connections-per-address=${bad}`, '--store', 'memory:'])).toThrow(/--connections-per-address must be a whole number ≥ 1/);
  });
});
