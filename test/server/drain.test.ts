/**
 * Drain (§3.1): live sessions finish, readiness turns 503, new sessions are refused; SIGTERM on a
 * real `voicewire serve` process does the same and exits 0.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { connect, startServer, type Harness, type WsConversation } from './harness.js';
import { upgradeAnswer } from '../helpers/upgrade-answer.js';

const root = join(import.meta.dirname, '../..');
let h: Harness | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
});

async function openSessions(wsBase: string, key: string, n: number): Promise<WsConversation[]> {
  const all = Array.from({ length: n }, (_, i) => {
    const c = connect(`${wsBase}/speech/tts`, { 'x-api-key': key });
    c.send({ type: 'setup', output_format: 'pcm' });
    c.send({ type: 'text', text: `session ${i} says` });
    return c;
  });
  await Promise.all(all.map((c) => c.waitFor((m) => m['type'] === 'audio')));
  return all;
}

describe('drain', () => {
  it('20 live sessions all finish with end_of_stream; readiness 503; new sessions refused', async () => {
    h = await startServer();
    const live = await openSessions(h.wsBase, h.apiKey, 20);
    const drain = await fetch(`${h.base}/drain`, { method: 'POST', headers: { 'x-api-key': h.adminKey } });
    expect(drain.status).toBe(200);
    expect((await fetch(`${h.base}/readyz`)).status).toBe(503);
    // Refused before the 101 (issue 36): a balancer can retry a 503, not an in-band 1013.
    for (const route of ['speech/tts', 'speech/asr']) {
      expect(await upgradeAnswer(`${h.wsBase}/${route}`, { 'x-api-key': h.apiKey })).toEqual({ status: 503, body: 'the server is draining and takes no new sessions; retry on another instance' });
    }
    const post = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: '{"text":"x"}' });
    expect(post.status).toBe(503);
    for (const c of live) c.send({ type: 'end_of_stream' });
    const closes = await Promise.all(live.map((c) => c.closed));
    expect(closes.map((c) => c.code)).toEqual(Array(20).fill(1000));
    for (const c of live) expect(c.messages.at(-1)).toEqual({ type: 'end_of_stream' });
    // Back to serving.
    expect((await fetch(`${h.base}/drain?enable=false`, { method: 'POST', headers: { 'x-api-key': h.adminKey } })).status).toBe(200);
    expect((await fetch(`${h.base}/readyz`)).status).toBe(200);
  });

  it('a WebSocket accepted (101) just before a drain begins is served to its end, not refused in band', async () => {
    h = await startServer();
    // Authentication waits on a gate: the drain begins between the 101 and the session's start.
    const find = h.store.findApiKeyByHash.bind(h.store);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let entered!: () => void;
    const authenticating = new Promise<void>((r) => (entered = r));
    h.store.findApiKeyByHash = async (hash) => {
      entered();
      await gate;
      return find(hash);
    };
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    await c.opened;
    await authenticating;
    const stopped = h.server.shutdown(10);
    open();
    c.send({ type: 'setup', output_format: 'pcm' });
    c.send({ type: 'text', text: 'admitted before the drain', flush: true });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    expect(c.messages.filter((m) => m['type'] === 'error')).toEqual([]);
    expect(c.messages.at(-1)).toEqual({ type: 'end_of_stream' });
    await stopped;
  });

  it('/drain and /statusz need an instance-admin key; enable is validated (422)', async () => {
    h = await startServer();
    const notAdmin = await fetch(`${h.base}/drain`, { method: 'POST', headers: { 'x-api-key': h.apiKey } });
    expect(notAdmin.status).toBe(500);
    expect(await notAdmin.text()).toBe('error from server 1008: this route needs an instance-admin key (voicewire keys create --admin)');
    const bad = await fetch(`${h.base}/drain?enable=maybe`, { method: 'POST', headers: { 'x-api-key': h.adminKey } });
    expect(bad.status).toBe(422);
    const status = await fetch(`${h.base}/statusz`, { headers: { 'x-api-key': h.adminKey } });
    expect(await status.json()).toMatchObject({ environment: 'development', draining: false, live_sessions: 0 });
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('SIGTERM on `voicewire serve` (port and store from VOICEWIRE_PORT / VOICEWIRE_STORE): live sessions finish, then exit 0', async () => {
    child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), 'serve', '--tts', 'tone', '--stt', 'tone'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, VOICEWIRE_PORT: '0', VOICEWIRE_STORE: 'memory:' } });
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const base = await new Promise<string>((resolve, reject) => {
      child!.stdout!.on('data', (d: Buffer) => {
        stdout += d.toString();
        const m = /^listening on (http:\/\/127\.0\.0\.1:\d+\/api)\n$/m.exec(stdout);
        if (m) resolve(m[1]!);
      });
      child!.once('exit', () => reject(new Error(`exited early: ${stderr}`)));
    });
    // The first-start keys are human lines on stdout, never in the JSON log stream on stderr
    // (a log shipper would store the instance-admin key).
    const key = /^API key \(x-api-key\): (vw_\S+)$/m.exec(stdout)![1]!;
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    const live = await openSessions(base.replace('http', 'ws'), key, 5);
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    for (const c of live) c.send({ type: 'end_of_stream' });
    const closes = await Promise.all(live.map((c) => c.closed));
    expect(closes.map((c) => c.code)).toEqual(Array(5).fill(1000));
    expect(await exited).toBe(0);
    const lines = stdout.split('\n').filter((l) => l !== '');
    expect(lines.filter((l) => l.startsWith('listening on '))).toHaveLength(1);
    expect(lines.filter((l) => /vw_/.test(l))).toEqual([expect.stringMatching(/^API key \(x-api-key\): vw_[\w-]{32}$/), expect.stringMatching(/^instance-admin key \(x-api-key on \/statusz, \/drain\): vw_[\w-]{32}$/)]);
    expect(lines.some((l) => l.startsWith('{'))).toBe(false);
    expect(stderr).not.toMatch(/vw_/);
    for (const l of stderr.split('\n').filter(Boolean)) expect(() => JSON.parse(l), l).not.toThrow();
  }, 20_000);
});
