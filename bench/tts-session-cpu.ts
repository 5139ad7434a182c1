/**
 * CPU per TTS session of the library's server session alone (issue 34): one `createTtsServerSession`
 * over an in-memory transport that takes `audio` lines as bytes (as the ws transport does), the
 * tone engine, `output_format` pcm, 12 one-word `text` messages then `end_of_stream`, for
 * `SESSIONS` sessions per round. No socket: what is measured is the per-word session machinery,
 * the tone engine and the line encoding.
 *
 * `npx tsx bench/tts-session-cpu.ts [sessions=3000] [rounds=6] [--ws-buffer]`; `BASE_SRC=/other/src` adds that
 * tree's session code in the same, alternating rounds (before/after as a ratio). Load (`uptime`)
 * is printed beside the figures.
 */
import { execSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const SESSIONS = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 6);
// `--ws-buffer`: sends return false past 16 KiB written in one turn until the next macrotask, with
// one shared `drained()` wait, as the corked ws transport does (src/node/ws-session.ts).
const WS_BUFFER = process.argv.includes('--ws-buffer');
const WORDS = ['the', 'quick', 'brown', 'fox', 'jumps', 'over', 'a', 'lazy', 'dog', 'near', 'the', 'river'];

interface Impl {
  name: string;
  createTtsServerSession: (o: unknown) => { receive(d: string): void; whenIdle(): Promise<void> };
  createToneTtsEngine: (c: unknown) => unknown;
}

async function load(name: string, src: string): Promise<Impl> {
  const s = (await import(pathToFileURL(resolve(src, 'sessions/tts-server-session.ts')).href)) as Pick<Impl, 'createTtsServerSession'>;
  const t = (await import(pathToFileURL(resolve(src, 'engines/tone.ts')).href)) as Pick<Impl, 'createToneTtsEngine'>;
  // Buffer's base64, as the Node entry (and so the built server) registers it.
  ((await import(pathToFileURL(resolve(src, 'node/base64.ts')).href)) as { registerNativeBase64(): void }).registerNativeBase64();
  return { name, createTtsServerSession: s.createTtsServerSession, createToneTtsEngine: t.createToneTtsEngine };
}

const context = { resolveVoice: async () => ({}), resolvePronunciation: async () => undefined };
let sink = 0;

async function runOne(impl: Impl, check?: string[]): Promise<void> {
  const engine = impl.createToneTtsEngine(context);
  let n = 0;
  let buffered = 0;
  let waiting: Promise<void> | undefined;
  const wrote = (bytes: number): boolean | undefined => {
    if (!WS_BUFFER) return undefined;
    if (buffered === 0) setImmediate(() => (buffered = 0));
    buffered += bytes;
    return buffered >= 16384 ? false : undefined;
  };
  const drained = (): Promise<void> =>
    buffered < 16384 ? Promise.resolve() : (waiting ??= new Promise<void>((resolve) => setImmediate(() => ((waiting = undefined), resolve()))));
  const session = impl.createTtsServerSession({
    engine,
    requestId: () => 'r',
    transport: {
      send: (text: string) => {
        sink += text.length;
        check?.push(text);
        return wrote(text.length);
      },
      sendAudio: (line: Uint8Array) => {
        sink += line.byteLength;
        check?.push(Buffer.from(line).toString('utf8'));
        return wrote(line.byteLength);
      },
      drained,
      close: () => {
        n++;
      },
    },
  });
  session.receive(JSON.stringify({ type: 'setup', output_format: 'pcm', voice_id: 'v' }));
  // The engine opens asynchronously (voice lookup): wait for it as a client waits for `ready`.
  await session.whenIdle();
  for (const w of WORDS) session.receive(JSON.stringify({ type: 'text', text: w }));
  session.receive(JSON.stringify({ type: 'end_of_stream' }));
  await session.whenIdle();
  sink += n;
}

async function round(impl: Impl): Promise<number> {
  await new Promise((r) => setImmediate(r));
  const t0 = process.cpuUsage();
  for (let i = 0; i < SESSIONS; i++) await runOne(impl);
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000 / SESSIONS;
}

const impls = [await load('after', resolve('src'))];
if (process.env.BASE_SRC) impls.unshift(await load('before', process.env.BASE_SRC));
// Same bytes on the wire from every build.
const outs = await Promise.all(impls.map(async (impl) => { const c: string[] = []; await runOne(impl, c); return c.join('\n'); }));
for (const o of outs) if (o !== outs[0]) throw new Error('builds differ on the wire');
console.log(`wire identical across builds (${outs[0]!.length} chars per session)`);
for (const impl of impls) await round(impl); // warm-up
const ms: Record<string, number[]> = Object.fromEntries(impls.map((i) => [i.name, []]));
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? impls : [...impls].reverse();
  for (const impl of order) ms[impl.name]!.push(await round(impl));
}
const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
for (const impl of impls) console.log(`${impl.name}: ${median(ms[impl.name]!).toFixed(3)} ms CPU/session (median of ${ROUNDS}; ${ms[impl.name]!.map((x) => x.toFixed(3)).join(' ')})`);
if (impls.length === 2) console.log(`after/before: ${(median(ms.after!) / median(ms.before!)).toFixed(3)}`);
console.log(`uptime: ${execSync('uptime').toString().trim()} (sink ${sink})`);
