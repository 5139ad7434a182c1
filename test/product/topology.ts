/**
 * The deployment of docs/operations.md run for real on loopback (issue 36): `node dist/cli.js
 * serve` instances on one Postgres behind HAProxy, configured by deploy/haproxy.cfg itself (its
 * `server` line repeated for each instance), with a load of REST, TTS WebSocket and STT WebSocket
 * loops whose every request is recorded. Shared by test/product/topology.test.ts, test/docs/deploy-files.test.ts
 * and bench/topology.ts. Every process it starts is in {@link Topology.children} and killed by
 * {@link Topology.destroy} (and at process exit).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { Agent, fetch as undiciFetch } from 'undici';
import { CLI, root } from './built-server.js';
import { freePort } from '../helpers/postgres.js';

/** Where Debian puts HAProxy. */
export const HAPROXY = '/usr/sbin/haproxy';

/** One `voicewire serve` of the topology, on a port it keeps across restarts. */
export interface Instance {
  /** Its name in HAProxy (`vw1`, …), which the balancer reports in `x-served-by`. */
  readonly name: string;
  readonly port: number;
  /** The running process (the primary under `--workers`), or null between a stop and a start. */
  proc: ChildProcess | null;
  /** Everything it wrote to stderr, all runs. */
  stderr: string;
  start(): Promise<void>;
  /** SIGTERM: drains, exits; resolves with the exit code (SIGKILL after `boundMs`: null). */
  stop(boundMs?: number): Promise<number | null>;
  /** `kill -9`. */
  kill(): Promise<void>;
}

/** HAProxy in master-worker mode (`-W`): SIGUSR2 reloads it as `systemctl reload` does. */
export interface Balancer {
  readonly base: string;
  readonly wsBase: string;
  proc: ChildProcess;
  /** Servers' state as HAProxy sees them (`UP`, `DOWN`, …), from its stats page. */
  states(): Promise<Record<string, string>>;
  /** Resolves once every named server is UP (rejects after `boundMs`). */
  waitUp(names: readonly string[], boundMs?: number): Promise<void>;
  reload(): void;
}

/** A running topology. */
export interface Topology {
  instances: Instance[];
  balancer: Balancer;
  /** Every process started, for the caller's checks; all killed by destroy. */
  children: Set<ChildProcess>;
  destroy(): void;
}

/** One instance: its extra `serve` flags. */
export interface InstanceSpec {
  args: readonly string[];
  env?: Record<string, string>;
}

/**
 * The balancer's configuration: deploy/haproxy.cfg with its `server NAME "${VAR}" OPTIONS` lines
 * replaced by one such line per instance (the first line's options), and a stats listener (for
 * {@link Balancer.states}) appended. The addresses are given through the environment as in
 * deploy/compose.yaml.
 */
export function balancerConfig(names: readonly string[], statsPort: number): string {
  const lines = readFileSync(join(root, 'deploy/haproxy.cfg'), 'utf8').split('\n');
  const server = /^(\s*)server\s+\S+\s+"\$\{\w+\}"(.*)$/;
  const at = lines.findIndex((l) => server.test(l));
  if (at < 0) throw new Error('deploy/haproxy.cfg has no `server NAME "${VAR}" …` line');
  const [, indent, opts] = server.exec(lines[at]!)!;
  const rest = lines.filter((l, i) => i < at || !server.test(l));
  rest.splice(at, 0, ...names.map((n, i) => `${indent}server ${n} "\${VOICEWIRE_${i + 1}}"${opts}`));
  return `${rest.join('\n')}\nfrontend stats\n  bind 127.0.0.1:${statsPort}\n  stats enable\n  stats uri /stats\n`;
}

function waitForLine(proc: ChildProcess, re: RegExp, what: string, boundMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => done(new Error(`${what}: no ${re} within ${boundMs} ms`)), boundMs);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = re.exec(out);
      if (m) done(undefined, m);
    };
    const onExit = (code: number | null): void => done(new Error(`${what} exited ${code} before ${re}`));
    function done(err?: Error, m?: RegExpExecArray): void {
      clearTimeout(timer);
      proc.stdout!.off('data', onData);
      proc.off('exit', onExit);
      if (err) reject(err);
      else resolve(m!);
    }
    proc.stdout!.on('data', onData);
    proc.once('exit', onExit);
  });
}

const exitOf = (p: ChildProcess): Promise<number | null> =>
  p.exitCode !== null || p.signalCode !== null ? Promise.resolve(p.exitCode) : new Promise((resolve) => p.once('exit', (code) => resolve(code)));

/**
 * Starts the instances (`node dist/cli.js serve --host 127.0.0.1 --port P ARGS`, env
 * `VOICEWIRE_LOG_LEVEL=warn` plus each spec's), one after the other, and HAProxy in front of them, and waits until
 * HAProxy sees every instance UP.
 */
export async function startTopology(specs: readonly InstanceSpec[], options: { env?: Record<string, string> } = {}): Promise<Topology> {
  const children = new Set<ChildProcess>();
  const dir = mkdtempSync(join(tmpdir(), 'vw-topology-'));
  let destroyed = false;
  const destroy = (): void => {
    if (destroyed) return;
    destroyed = true;
    process.off('exit', destroy);
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', destroy);
  try {
    const instances = await Promise.all(specs.map(async (spec, i) => makeInstance(`vw${i + 1}`, await freePort(), spec, options.env ?? {}, children)));
    // In order, as compose's depends_on starts them: the first creates the schema.
    for (const s of instances) await s.start();
    const [port, statsPort] = [await freePort(), await freePort()];
    const file = join(dir, 'haproxy.cfg');
    writeFileSync(
      file,
      balancerConfig(
        instances.map((s) => s.name),
        statsPort,
      ),
    );
    const env: Record<string, string> = { ...process.env, VOICEWIRE_BIND: `127.0.0.1:${port}` } as Record<string, string>;
    instances.forEach((s, i) => (env[`VOICEWIRE_${i + 1}`] = `127.0.0.1:${s.port}`));
    const proc = spawn(HAPROXY, ['-W', '-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'], env });
    children.add(proc);
    let haproxyOut = '';
    proc.stdout!.on('data', (d: Buffer) => (haproxyOut += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (haproxyOut += d.toString()));
    const states = async (): Promise<Record<string, string>> => {
      const r = await undiciFetch(`http://127.0.0.1:${statsPort}/stats;csv`);
      const rows = (await r.text()).split('\n').map((l) => l.split(','));
      const head = rows[0]!.map((h) => h.replace(/^# /, ''));
      const [px, sv, st] = ['pxname', 'svname', 'status'].map((h) => head.indexOf(h));
      return Object.fromEntries(rows.filter((r) => r[px!] === 'voicewire' && r[sv!] !== 'BACKEND' && r[sv!] !== 'FRONTEND').map((r) => [r[sv!]!, r[st!]!]));
    };
    const balancer: Balancer = {
      base: `http://127.0.0.1:${port}/api`,
      wsBase: `ws://127.0.0.1:${port}/api`,
      proc,
      states,
      async waitUp(names, boundMs = 20_000) {
        const until = Date.now() + boundMs;
        for (;;) {
          const s = await states().catch(() => ({}) as Record<string, string>);
          if (names.every((n) => s[n] === 'UP')) return;
          if (Date.now() > until) throw new Error(`HAProxy does not see ${names.join(', ')} UP within ${boundMs} ms: ${JSON.stringify(s)}\n${haproxyOut.slice(-2000)}`);
          if (proc.exitCode !== null) throw new Error(`HAProxy exited ${proc.exitCode}: ${haproxyOut.slice(-2000)}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      },
      reload: () => void proc.kill('SIGUSR2'),
    };
    await balancer.waitUp(instances.map((s) => s.name));
    return { instances, balancer, children, destroy };
  } catch (err) {
    destroy();
    throw err;
  }
}

function makeInstance(name: string, port: number, spec: InstanceSpec, env: Record<string, string>, children: Set<ChildProcess>): Instance {
  const inst: Instance = {
    name,
    port,
    proc: null,
    stderr: '',
    async start() {
      const proc = spawn(process.execPath, [CLI, 'serve', '--host', '127.0.0.1', '--port', String(port), ...spec.args], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, VOICEWIRE_LOG_LEVEL: 'warn', ...env, ...spec.env },
      });
      children.add(proc);
      proc.stderr!.on('data', (d: Buffer) => (inst.stderr += d.toString()));
      inst.proc = proc;
      await waitForLine(proc, /^listening on /m, `${name} (serve ${spec.args.join(' ')})`, 30_000).catch((err: Error) => {
        throw new Error(`${err.message}\n${inst.stderr.slice(-2000)}`);
      });
    },
    async stop(boundMs = 40_000) {
      const p = inst.proc;
      if (p === null) return null;
      p.kill('SIGTERM');
      const kill = setTimeout(() => p.kill('SIGKILL'), boundMs);
      const code = await exitOf(p);
      clearTimeout(kill);
      inst.proc = null;
      return code;
    },
    async kill() {
      const p = inst.proc;
      if (p === null) return;
      // The whole group would take a --workers primary's children too; a plain -9 leaves them,
      // as a crash of the primary alone would (the cluster's workers then exit themselves).
      p.kill('SIGKILL');
      await exitOf(p);
      inst.proc = null;
    },
  };
  return inst;
}

/** What one request or session of the load did. */
export interface LoadRecord {
  /** A TTS POST, a TTS WebSocket session, an STT WebSocket session. */
  kind: 'rest' | 'ws' | 'stt';
  /** The loop (and its organization) that made it. */
  loop: number;
  /** performance.now() at its start and end. */
  start: number;
  end: number;
  ok: boolean;
  error?: string;
  /** The instance HAProxy sent it to (`x-served-by`), when an answer came. */
  servedBy?: string;
  /** Start to the first audio (TTS), or to the first text (STT), ms. */
  ttfa?: number;
  /** Attempts made after the first (only with {@link LoadOptions.retry}). */
  retries: number;
  /**
   * A WebSocket session's words as they came (each word's text message follows its audio), in
   * characters of the session's whole text: where the word ends, where the next word starts (what
   * the server may count delivered once the word's audio left: up to a flush's trailing space),
   * and performance.now() when it came.
   */
  words?: Array<{ end: number; next: number; at: number }>;
}

/** Options of {@link runLoad}. */
export interface LoadOptions {
  base: string;
  wsBase: string;
  /** One API key per loop (each of its own organization): REST loops first, then TTS WebSocket loops, then `sttLoops` STT WebSocket loops. */
  keys: readonly string[];
  restLoops: number;
  /** The last this many loops stream `sttClip` to `/speech/asr`. Default 0. */
  sttLoops?: number;
  /** What STT sessions stream: s16le 24 kHz mono (tone-engine speech, {@link fetchSttClip}). */
  sttClip?: Uint8Array;
  /** Ends when `stop()` is called or after `maxMs`, whichever first; each loop makes at most `maxPerLoop` requests. */
  maxMs: number;
  maxPerLoop: number;
  /** Pause between two requests of a loop, ms. Default 20. */
  pauseMs?: number;
  /**
   * Retry as voicewire's SDK does (src/client/socket.ts, retry.ts): a WebSocket whose upgrade
   * failed and a REST request answered 503 or not at all, at most twice, 200 ms then 400 ms
   * later: nothing was done yet. Default false: the balancer alone must keep every request whole.
   */
  retry?: boolean;
}

const REST_TEXT = 'hello there';
/** A session's texts, sent `WS_TEXT_GAP_MS` apart: it lives about a second, so drains meet live ones. */
const WS_TEXTS = ['one session ', 'speaks in ', 'three parts'];
const WS_TEXT = WS_TEXTS.join('');
const WS_TEXT_GAP_MS = 300;
/** Longest request or session before the load gives up on it (a failure). */
const REQUEST_BOUND_MS = 20_000;
/** An STT session streams its clip in 80 ms chunks (3840 bytes at 24 kHz), at real time. */
const STT_CHUNK = 3840;
const STT_CHUNK_MS = 80;
/** What the STT clip says (the tone engines read back what they speak). */
export const STT_CLIP_TEXT = 'hello there';

const fresh = new Agent({ keepAliveTimeout: 500, keepAliveMaxTimeout: 500 });

/** The records of requests in flight, by load (what {@link Load.inFlight} lists). */
type Live = Set<LoadRecord>;

async function restOnce(o: LoadOptions, loop: number, live: Live): Promise<{ rec: LoadRecord; retryable: boolean }> {
  let status = 0;
  const start = performance.now();
  const rec: LoadRecord = { kind: 'rest', loop, start, end: start, ok: false, retries: 0 };
  live.add(rec);
  try {
    const r = await undiciFetch(`${o.base}/post/speech/tts`, {
      method: 'POST',
      headers: { 'x-api-key': o.keys[loop]!, 'content-type': 'application/json' },
      body: JSON.stringify({ text: REST_TEXT, output_format: 'pcm_16000', only_audio: true }),
      dispatcher: fresh,
      signal: AbortSignal.timeout(REQUEST_BOUND_MS),
    });
    status = r.status;
    const served = r.headers.get('x-served-by');
    if (served !== null) rec.servedBy = served;
    const body = new Uint8Array(await r.arrayBuffer());
    rec.ttfa = performance.now() - start;
    rec.ok = r.status === 200 && body.length > 0;
    if (!rec.ok) rec.error = `HTTP ${r.status}: ${new TextDecoder().decode(body.subarray(0, 200))}`;
  } catch (err) {
    rec.error = (err as Error).message;
  }
  rec.end = performance.now();
  live.delete(rec);
  return { rec, retryable: status === 0 || status === 503 };
}

/** The SDK's rule: retry what failed before any work was done, at most twice. */
async function withRetries(o: LoadOptions, attempt: () => Promise<{ rec: LoadRecord; retryable: boolean }>): Promise<LoadRecord> {
  const start = performance.now();
  for (let n = 0; ; n++) {
    const { rec, retryable } = await attempt();
    if (rec.ok || !retryable || !o.retry || n === 2) {
      rec.start = start;
      rec.retries = n;
      return rec;
    }
    await new Promise((r) => setTimeout(r, 200 * 2 ** n));
  }
}

/** Ends a WebSocket session's record once (false if it had ended): its time, error and outcome; the socket cut. */
function endSession(rec: LoadRecord, live: Live, ws: WebSocket, error: string | undefined): boolean {
  if (rec.end !== rec.start) return false;
  rec.end = performance.now();
  if (error !== undefined) rec.error = error;
  rec.ok = error === undefined;
  live.delete(rec);
  if (ws.readyState !== ws.CLOSED) ws.terminate();
  return true;
}

/** Notes which instance served the upgrade (the balancer's header); a refused or failed upgrade ends the session. */
function watchUpgrade(ws: WebSocket, rec: LoadRecord, finish: (error?: string) => void): void {
  ws.on('upgrade', (res) => {
    const served = res.headers['x-served-by'];
    if (typeof served === 'string') rec.servedBy = served;
  });
  ws.on('unexpected-response', (_req, res) => finish(`upgrade answered HTTP ${res.statusCode}`));
  ws.on('error', (err) => finish(err.message));
}

function wsOnce(o: LoadOptions, loop: number, live: Live): Promise<{ rec: LoadRecord; retryable: boolean }> {
  const start = performance.now();
  const rec: LoadRecord = { kind: 'ws', loop, start, end: start, ok: false, retries: 0 };
  live.add(rec);
  let opened = false;
  return new Promise((resolve) => {
    const ws = new WebSocket(`${o.wsBase}/speech/tts`, { headers: { 'x-api-key': o.keys[loop]! } });
    const timers: NodeJS.Timeout[] = [];
    let last: Record<string, unknown> | undefined;
    const finish = (error?: string): void => {
      for (const t of timers) clearTimeout(t);
      if (endSession(rec, live, ws, error)) resolve({ rec, retryable: !opened });
    };
    timers.push(setTimeout(() => finish(`no end within ${REQUEST_BOUND_MS} ms`), REQUEST_BOUND_MS));
    watchUpgrade(ws, rec, finish);
    ws.on('open', () => {
      opened = true;
      ws.send(JSON.stringify({ type: 'setup', output_format: 'pcm_16000' }));
      WS_TEXTS.forEach((text, i) =>
        timers.push(
          setTimeout(() => {
            if (ws.readyState !== ws.OPEN) return;
            ws.send(JSON.stringify({ type: 'text', text, flush: true }));
            if (i === WS_TEXTS.length - 1) ws.send(JSON.stringify({ type: 'end_of_stream' }));
          }, i * WS_TEXT_GAP_MS),
        ),
      );
    });
    let cursor = 0;
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as Record<string, unknown>;
      last = m;
      if (m['type'] === 'audio' && rec.ttfa === undefined) rec.ttfa = performance.now() - start;
      if (m['type'] === 'text' && typeof m['text'] === 'string') {
        const at = WS_TEXT.indexOf(m['text'], cursor);
        if (at >= 0) {
          cursor = at + m['text'].length;
          const next = WS_TEXT.slice(cursor).search(/\S/);
          (rec.words ??= []).push({ end: cursor, next: next < 0 ? WS_TEXT.length : cursor + next, at: performance.now() });
        }
      }
      if (m['type'] === 'error') finish(`error ${String(m['code'])} ${String(m['message'])}`);
    });
    ws.on('close', (code) => finish(code === 1000 && last?.['type'] === 'end_of_stream' && rec.ttfa !== undefined ? undefined : `closed ${code} after ${String(last?.["type"] ?? "no message")}`));
  });
}

/**
 * One STT WebSocket session: `setup`, the clip in 80 ms chunks at real time, `end_of_stream`; it
 * succeeds when text came and the server ended it (its `end_of_stream`, close 1000).
 */
function sttOnce(o: LoadOptions, loop: number, live: Live): Promise<{ rec: LoadRecord; retryable: boolean }> {
  const start = performance.now();
  const rec: LoadRecord = { kind: 'stt', loop, start, end: start, ok: false, retries: 0 };
  live.add(rec);
  const clip = o.sttClip ?? new Uint8Array(0);
  let opened = false;
  return new Promise((resolve) => {
    const ws = new WebSocket(`${o.wsBase}/speech/asr`, { headers: { 'x-api-key': o.keys[loop]! } });
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const finish = (error?: string): void => {
      clearTimeout(timer);
      clearTimeout(bound);
      if (endSession(rec, live, ws, error)) resolve({ rec, retryable: !opened });
    };
    const bound = setTimeout(() => finish(`no end within ${REQUEST_BOUND_MS} ms`), REQUEST_BOUND_MS);
    watchUpgrade(ws, rec, finish);
    ws.on('open', () => {
      opened = true;
      ws.send(JSON.stringify({ type: 'setup', input_format: 'pcm' }));
      let at = 0;
      const t0 = performance.now();
      const next = (): void => {
        if (ws.readyState !== ws.OPEN) return;
        ws.send(JSON.stringify({ type: 'audio', audio: Buffer.from(clip.subarray(at, at + STT_CHUNK)).toString('base64') }));
        at += STT_CHUNK;
        // Real time against the start, so timer slack does not add up.
        if (at < clip.length) timer = setTimeout(next, Math.max(0, t0 + (at / STT_CHUNK) * STT_CHUNK_MS - performance.now()));
        else ws.send(JSON.stringify({ type: 'end_of_stream' }));
      };
      next();
    });
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as Record<string, unknown>;
      if (m['type'] === 'text' && rec.ttfa === undefined) rec.ttfa = performance.now() - start;
      if (m['type'] === 'end_of_stream') ended = true;
      if (m['type'] === 'error') finish(`error ${String(m['code'])} ${String(m['message'])}`);
    });
    ws.on('close', (code) => finish(code === 1000 && ended && rec.ttfa !== undefined ? undefined : `closed ${code}${ended ? ' after end_of_stream' : ''}${rec.ttfa === undefined ? ' without text' : ''}`));
  });
}

/** A failure that is the organization's budget running out (`CREDITS_EXHAUSTED`, refused before any work): expected of a small budget. */
export function exhausted(r: LoadRecord): boolean {
  return !r.ok && /not enough credits/.test(r.error ?? '');
}

/** The tone engine's speech of {@link STT_CLIP_TEXT} at 24 kHz, for STT sessions (a POST with `key`, through `base`). */
export async function fetchSttClip(base: string, key: string): Promise<Uint8Array> {
  const r = await undiciFetch(`${base}/post/speech/tts`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ text: STT_CLIP_TEXT, output_format: 'pcm_24000', only_audio: true }),
    dispatcher: fresh,
  });
  if (r.status !== 200) throw new Error(`the STT clip: HTTP ${r.status} ${await r.text()}`);
  return new Uint8Array(await r.arrayBuffer());
}

/** A running load: `stop()` ends it (each loop finishes its request in flight); `done` has every record. */
export interface Load {
  stop(): void;
  done: Promise<LoadRecord[]>;
  /** The requests and sessions in flight now (a session's `servedBy` is known once upgraded). */
  inFlight(): LoadRecord[];
}

/** Starts `keys.length` loops: the first `restLoops` POST /post/speech/tts, the last `sttLoops` STT WebSocket sessions, the others TTS WebSocket sessions. */
export function runLoad(o: LoadOptions): Load {
  let stopped = false;
  const until = performance.now() + o.maxMs;
  const records: LoadRecord[] = [];
  const live: Live = new Set();
  const loops = o.keys.map(async (_, loop) => {
    for (let n = 0; n < o.maxPerLoop && !stopped && performance.now() < until; n++) {
      const stt = loop >= o.keys.length - (o.sttLoops ?? 0);
      records.push(await withRetries(o, () => (loop < o.restLoops ? restOnce(o, loop, live) : stt ? sttOnce(o, loop, live) : wsOnce(o, loop, live))));
      await new Promise((r) => setTimeout(r, o.pauseMs ?? 20));
    }
  });
  return {
    stop: () => void (stopped = true),
    done: Promise.all(loops).then(() => records.sort((a, b) => a.start - b.start)),
    inFlight: () => [...live],
  };
}

/** The 99th percentile of `values` (nearest rank), or NaN for none. */
export function p99(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)]!;
}

/** An organization's books in the store: its credits and its usage lines. */
export interface OrgUsage {
  allocated: number;
  remaining: number;
  lines: number;
  units: number;
  credits: number;
}

/** Every organization's books, by name, read with `psql` (the cluster's superuser). */
export function usageByOrg(psql: (sql: string) => string): Map<string, OrgUsage> {
  const out = psql(
    `SELECT o.name, o.allocated_credits, o.remaining_credits, count(u.id), coalesce(sum(u.units), 0), coalesce(sum(u.credits), 0)
       FROM organizations o LEFT JOIN usage u ON u.org_id = o.id GROUP BY o.id, o.name, o.allocated_credits, o.remaining_credits`,
  );
  const m = new Map<string, OrgUsage>();
  for (const line of out.trim().split('\n').filter(Boolean)) {
    const [name, allocated, remaining, lines, units, credits] = line.split('|');
    m.set(name!, { allocated: Number(allocated), remaining: Number(remaining), lines: Number(lines), units: Number(units), credits: Number(credits) });
  }
  return m;
}

/** Units (TTS characters, STT seconds) the store bills for one request of each kind of the load, measured by {@link calibrate}. */
export interface UnitsPerRequest {
  rest: number;
  ws: number;
  /** NaN when not calibrated (no STT loops). */
  stt: number;
}

/**
 * Runs one REST request, one TTS WebSocket session and, with a third key and `sttClip`, one STT
 * session of the load (through the balancer, each key its own organization) and reads what each
 * was billed: the expected books of the load are counted in these (the session runner's billing,
 * not this file's guess of it).
 */
export async function calibrate(
  o: Pick<LoadOptions, 'base' | 'wsBase' | 'sttClip'>,
  keys: readonly [string, string] | readonly [string, string, string],
  orgs: readonly [string, string] | readonly [string, string, string],
  psql: (sql: string) => string,
): Promise<UnitsPerRequest> {
  const records = await runLoad({ ...o, keys, restLoops: 1, sttLoops: keys.length - 2, maxMs: 30_000, maxPerLoop: 1 }).done;
  const bad = records.filter((r) => !r.ok);
  if (bad.length > 0 || records.length !== keys.length) throw new Error(`calibration failed: ${JSON.stringify(records)}`);
  const usage = usageByOrg(psql);
  const [rest, ws, stt] = orgs.map((n) => usage.get(n));
  if (rest?.lines !== 1 || ws?.lines !== 1 || (stt !== undefined && stt.lines !== 1)) throw new Error(`calibration: expected one usage line each, got ${JSON.stringify([rest, ws, stt])}`);
  return { rest: rest.units, ws: ws.units, stt: stt?.units ?? Number.NaN };
}

/**
 * What the books of one loop's organization should say, from what its client saw: each request
 * that succeeded paid for its whole text, in one usage line. A request that failed on a killed
 * instance may have left its hold charged (src/server/credits.ts: up to its text plus
 * HOLD_AHEAD_MAX beyond it); none other may differ.
 */
export function expectedBooks(records: readonly LoadRecord[], per: UnitsPerRequest): { ok: number; okUnits: number } {
  const ok = records.filter((r) => r.ok);
  return { ok: ok.length, okUnits: ok.reduce((n, r) => n + per[r.kind], 0) };
}

/** Usage lines still held open by an instance (issue 36: none once every request ended and the sweeps ran). */
export function openHolds(psql: (sql: string) => string): number {
  return Number(psql('SELECT count(*) FROM usage WHERE holder IS NOT NULL').trim());
}

/** Resolves once no usage line is held open (every dead instance's holds swept); rejects after `boundMs`. */
export async function waitForSweep(psql: (sql: string) => string, boundMs = 30_000): Promise<void> {
  const until = Date.now() + boundMs;
  while (openHolds(psql) > 0) {
    if (Date.now() > until) throw new Error(`${openHolds(psql)} holds still open ${boundMs} ms after the load (no sweep?)`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * What a request cut by a kill (or ended just before it, its settlement maybe unwritten) may be
 * charged once its instance's holds are swept, in characters: at most what its client was
 * delivered (a TTS WebSocket session: up to the start of the word after the last it heard; a POST
 * cut mid-body: its text, the client cannot tell which words it got; an STT session: the seconds
 * of its clip; one that succeeded: all of it), and at least what it had been delivered `lagMs` before the kill (the sweep charges the
 * last checkpoint: a heartbeat or a hold's growth; what came after it is not charged).
 */
export function cutRequestBounds(r: LoadRecord, per: UnitsPerRequest, killedAt: number, lagMs: number): { low: number; high: number } {
  if (r.ok) return { low: r.end <= killedAt - lagMs ? per[r.kind] : 0, high: per[r.kind] };
  // A POST cut mid-body, an STT session cut mid-stream (it pays the seconds it had sent): at most the whole.
  if (r.kind !== 'ws') return { low: 0, high: per[r.kind] };
  const words = r.words ?? [];
  const before = words.filter((w) => w.at <= killedAt - lagMs).at(-1);
  return { low: before?.end ?? 0, high: words.at(-1)?.next ?? 0 };
}
