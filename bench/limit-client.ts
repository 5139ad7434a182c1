/**
 * The load client of bench/limit.ts, in a process of its own (its CPU is not the server's). Two
 * modes, one JSON {@link LimitClientConfig} argument:
 *
 * - `run`: holds `sessions` concurrent TTS WebSocket sessions (§4.5) for `seconds`, the first
 *   ones spread over one session's length (a steady arrival rate, not a burst), each ended one
 *   replaced at once. A session: connect, `setup` (PCM), 12 words at 150 wpm (one `text` of
 *   `word ` every 400 ms, the first on open), `end_of_stream`, the server's close. Timed FROM
 *   CONNECT (the moment the socket is asked for): `open`, `ready`, first audio (TTFA). Real time
 *   with a 200 ms jitter buffer: playback starts 200 ms after the first frame; frame k is due at
 *   that start plus k·80 ms, but never before its word was sent plus 200 ms (audio the client had
 *   not asked for yet is not late); a frame after its due time is an underrun (playback resumes
 *   when it arrives). A session is real-time when none of its frames was late.
 *   Prints one JSON {@link LimitRunReport} line at the end.
 * - `idle`: opens `sessions` sockets (50 at a time), sends `setup`, waits for each `ready`, prints `ready N` (N set up),
 *   and holds them (pinging nothing) until stdin closes or says `stop`.
 *
 * Messages are told apart by their first bytes (no decode of 10 kB audio lines): the client's
 * CPU stays low so the server gets the machine.
 */
import { appendFileSync } from 'node:fs';
import { WebSocket } from 'ws';

export interface LimitClientConfig {
  mode: 'run' | 'idle';
  /** WebSocket URL of the TTS route. */
  url: string;
  /** API keys, used in turn (none for the bare server). */
  keys: string[];
  sessions: number;
  /** `run`: how long new sessions are started, s. */
  seconds?: number;
}

export interface LimitRunReport {
  /** Sessions finished (closed 1000 after end_of_stream) and failed. */
  completed: number;
  failed: number;
  errorSamples: string[];
  /** Sessions with no late frame, among the completed. */
  realTime: number;
  /** Most sessions open at once. */
  peakLive: number;
  /** ms from connect: socket open, ready, first audio (one per completed session). */
  connectMs: number[];
  readyMs: number[];
  ttfaMs: number[];
  /** Frames received in all, and late ones. */
  frames: number;
  lateFrames: number;
  /** This client's own CPU, ms. */
  clientCpuMs: number;
}

const cfg = JSON.parse(process.argv[2]!) as LimitClientConfig;
const WORDS = 'the quick brown fox jumps over a lazy dog while seven stars'.split(' ');
const WORD_MS = 400; // 150 words a minute
const JITTER_MS = 200;
const FRAME_MS = 80;
// Frames the server sends for each word (the tone engine's: 2 silent frames before every word but the first, one per character).
const FIRST_FRAME_OF_WORD: number[] = [];
{
  let f = 0;
  WORDS.forEach((w, i) => {
    f += i > 0 ? 2 : 0;
    FIRST_FRAME_OF_WORD.push(i > 0 ? f - 2 : 0);
    f += w.length;
  });
}
const SESSION_MS = WORDS.length * WORD_MS;

let keyIndex = 0;
const nextKey = (): Record<string, string> => (cfg.keys.length === 0 ? {} : { 'x-api-key': cfg.keys[keyIndex++ % cfg.keys.length]! });
// Byte 9 of `{"type":"…`: a(udio) r(eady) t(ext) e(nd_of_stream | rror: byte 10).
const kind = (b: Buffer): string => (b[9] === 0x65 ? (b[10] === 0x6e ? 'end' : 'error') : String.fromCharCode(b[9]!));

const report: LimitRunReport = { completed: 0, failed: 0, errorSamples: [], realTime: 0, peakLive: 0, connectMs: [], readyMs: [], ttfaMs: [], frames: 0, lateFrames: 0, clientCpuMs: 0 };
const fail = (why: string): void => {
  report.failed++;
  if (report.errorSamples.length < 5) report.errorSamples.push(why.slice(0, 200));
};
const sockets = new Set<WebSocket>();
let live = 0;
// LIMIT_TRACE=file: one line per completed session (connect time on the monotonic clock in µs, as a
// --cpu-prof profile's timestamps, then connect, ready and first-audio ms), to match slow connects with the server's long turns.
const traceFile = process.env.LIMIT_TRACE;
const trace: string[] | undefined = traceFile ? [] : undefined;
let stopping = false;

function session(done: () => void): void {
  const t0 = performance.now();
  const t0Hr = process.hrtime.bigint();
  live++;
  report.peakLive = Math.max(report.peakLive, live);
  const ws = new WebSocket(cfg.url, { headers: nextKey(), skipUTF8Validation: true, perMessageDeflate: false });
  sockets.add(ws);
  let open = 0;
  let ready = 0;
  let first = 0;
  let frame = 0;
  let late = 0;
  let playAt = 0; // when the next frame is due to play
  let ended = false;
  const sentAt: number[] = [];
  let word = 0; // index of the word the next frame belongs to
  let timer: NodeJS.Timeout | undefined;
  ws.on('open', () => {
    open = performance.now();
    ws.send('{"type":"setup","output_format":"pcm"}');
    const send = (): void => {
      if (ws.readyState !== ws.OPEN) return;
      sentAt.push(performance.now());
      ws.send(JSON.stringify({ type: 'text', text: `${WORDS[sentAt.length - 1]} ` }));
      if (sentAt.length < WORDS.length) timer = setTimeout(send, WORD_MS);
      else ws.send('{"type":"end_of_stream"}');
    };
    send();
  });
  ws.on('message', (data: Buffer) => {
    const now = performance.now();
    const k = kind(data);
    if (k === 'a') {
      if (first === 0) {
        first = now;
        playAt = now + JITTER_MS;
      }
      while (word + 1 < WORDS.length && frame >= FIRST_FRAME_OF_WORD[word + 1]!) word++;
      const due = Math.max(playAt, (sentAt[word] ?? now) + JITTER_MS);
      if (now > due + 1) late++;
      playAt = Math.max(due, now) + FRAME_MS;
      frame++;
    } else if (k === 'r') ready = now;
    else if (k === 'end') ended = true;
    else if (k === 'error') fail(`error message: ${data.toString('utf8', 0, 200)}`);
  });
  ws.on('error', (e) => fail(`socket: ${e.message}`));
  ws.on('close', (code) => {
    clearTimeout(timer);
    sockets.delete(ws);
    live--;
    if (!stopping) {
      if (code === 1000 && ended && first > 0) {
        report.completed++;
        report.connectMs.push(open - t0);
        if (trace !== undefined) trace.push(`${(t0Hr / 1000n).toString()}\t${(open - t0).toFixed(1)}\t${(ready - t0).toFixed(1)}\t${(first - t0).toFixed(1)}`);
        report.readyMs.push(ready - t0);
        report.ttfaMs.push(first - t0);
        report.frames += frame;
        report.lateFrames += late;
        if (late === 0) report.realTime++;
      } else fail(`closed ${code}${ended ? '' : ' before end_of_stream'}`);
    }
    done();
  });
}

async function run(): Promise<void> {
  const until = performance.now() + cfg.seconds! * 1000;
  const next = (): void => {
    if (!stopping && performance.now() < until) session(next);
  };
  // The first sessions spread over one session's length: then arrivals are steady.
  for (let i = 0; i < cfg.sessions; i++) setTimeout(() => session(next), (i * SESSION_MS) / cfg.sessions);
  const cpu0 = process.cpuUsage();
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (performance.now() >= until + 100 && live === 0) {
        clearInterval(check);
        resolve();
      } else if (performance.now() > until + 60_000) {
        stopping = true;
        for (const ws of sockets) ws.terminate();
      }
    }, 100);
  });
  const cpu = process.cpuUsage(cpu0);
  report.clientCpuMs = (cpu.user + cpu.system) / 1000;
  if (traceFile !== undefined) appendFileSync(traceFile, trace!.map((l) => l + '\n').join(''));
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

async function idle(): Promise<void> {
  // In batches of 50 (the figure is memory, not admission); a socket that fails is left out.
  let opened = 0;
  for (let i = 0; i < cfg.sessions; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, cfg.sessions - i) }, () =>
        new Promise<void>((resolve) => {
          const ws = new WebSocket(cfg.url, { headers: nextKey(), skipUTF8Validation: true, perMessageDeflate: false });
          sockets.add(ws);
          ws.on('open', () => ws.send('{"type":"setup","output_format":"pcm"}'));
          ws.on('message', (data: Buffer) => {
            if (kind(data) === 'r') {
              opened++;
              resolve();
            }
          });
          ws.on('error', () => resolve());
          ws.on('close', () => resolve());
        }),
      ),
    );
  }
  process.stdout.write(`ready ${opened}\n`);
  await new Promise<void>((resolve) => {
    process.stdin.on('data', (d) => String(d).includes('stop') && resolve());
    process.stdin.on('end', () => resolve());
  });
  stopping = true;
  for (const ws of sockets) ws.terminate();
}

await (cfg.mode === 'run' ? run() : idle());
setTimeout(() => process.exit(0), 100);
