/**
 * TTS overhead over the engine (issue 34): server CPU per second of 48 kHz audio against espeak-ng's
 * own CPU per second of audio. `npx tsx bench/tts-overhead.ts [--quick] [--profile] [--save]` after
 * `npm run build`.
 *
 * Servers, each a child process started once: the BUILT `dist/cli.js serve` (SQLite in a temp
 * folder) with `--tts espeak-system` (the system library through koffi) and `--tts espeak-wasm`
 * (the WebAssembly build); `TTS_BASE_CLI=/other/dist/cli.js` adds the same two of another build
 * (its own data folder and key, made by its own CLI), so before/after come from the same rounds. Rounds ALTERNATE: every round runs every server once, in a rotated
 * order, so load from other processes hits all alike.
 *
 * A run is a continuous stream of text (English sentences, seeded, the same every run) spoken two ways:
 * - `ws`: one `/speech/tts` WebSocket, `output_format` pcm, the text sent as it would come from a
 *   language model (a `text` message of 4 words, all at once), then `end_of_stream`; audio is
 *   counted from the base64 of the `audio` messages;
 * - `post`: `POST /post/speech/tts`, pcm, `only_audio` (the body is the audio);
 * - `post temp 0`: the same with `json_config.temp` 0 (deterministic, §2.8) on a quarter of the text.
 * Server CPU is user+system of the server's process (all its threads) from /proc/PID/stat over
 * the run, divided by the seconds of audio received.
 *
 * The engine alone, measured in the same rounds on the same text (ms of CPU per second of audio
 * at its own 22.05 kHz): the `espeak-ng --stdout` command (children CPU from /proc/self/stat,
 * start-up included); the system library called directly through koffi in a tight loop, one
 * synchronous `espeak_Synth` per sentence (as the server speaks), samples copied out as the
 * server does; the WebAssembly build in a tight loop in a worker thread of this process (its own
 * cost, apart from the server).
 *
 * `--profile`: the servers run with `--cpu-prof`; after the rounds their main-thread profiles are
 * split into stages by the nearest marked function on each sample's stack (see STAGES): resampling,
 * word timing and framing, the engine glue (koffi callbacks, the WebAssembly thread's messages),
 * the wire (base64 + JSON line + socket/HTTP write), GC, the rest. CPU that is on no main-thread
 * sample (the synthesis thread, libuv) is the server's /proc CPU minus the main thread's.
 *
 * Machine and load (`uptime`) are printed beside the figures.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import WebSocket from 'ws';
import { openStore } from '../src/server/store/open.js';
import { ensureOrganization } from '../src/server/bootstrap.js';
import { createKey } from '../src/server/keys.js';
import { machine, otherBuildKey, saveFile, spawnServer, stopWithBench } from './util.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cliJs = join(root, 'dist/cli.js');
const quick = process.argv.includes('--quick');
const profile = process.argv.includes('--profile');
const ROUNDS = quick ? 2 : Number(process.env.TTS_ROUNDS ?? 5);
/** Sentences per run (~3.5 s of audio each at 48 kHz). */
const SENTENCES = quick ? 12 : Number(process.env.TTS_SENTENCES ?? 40);
/** Alternated passes of the resampler alone and of the replayed engine in each stages measurement. */
const WARM_SENTENCES = Number(process.env.TTS_WARM ?? 3);
const REPLAY_PASSES = Number(process.env.TTS_REPLAY_PASSES ?? 7);
const TICK = 100; // /proc clock ticks per second (USER_HZ)
const baseCli = process.env.TTS_BASE_CLI ?? '';
/**
 * The voice every run speaks with: `TTS_VOICE`, a catalog uid (e.g. `espeak-en-noah`), or by
 * default the one a request without `voice_id` gets (Emma, on the first English catalog voice,
 * Ava: `en-us+f2`). The system library's long output buffer (espeak-system.ts) is for voices
 * without an echo: Ava keeps the short one, Noah (`+m3`) gets it.
 */
const voiceUid = process.env.TTS_VOICE ?? '';
const { catalogVoices, defaultVoiceParams } = await import('../src/engines/espeak-voices.js');
const catalogVoice = voiceUid === '' ? undefined : catalogVoices().find((v) => v.uid === voiceUid);
if (voiceUid !== '' && catalogVoice === undefined) {
  console.error(`bench/tts-overhead: TTS_VOICE ${voiceUid} is not a catalog voice`);
  process.exit(2);
}
/** The espeak parameters of that voice (what the engine speaks it with, json_config left out). */
const voiceParams = (catalogVoice?.params ?? defaultVoiceParams('en')) as { voice: string; variant?: string; rate: number; pitch: number; range: number };
const espeakVoiceName = voiceParams.variant ? `${voiceParams.voice}+${voiceParams.variant}` : voiceParams.voice;

if (!existsSync(cliJs)) {
  console.error('bench/tts-overhead: dist/cli.js missing: run npm run build first');
  process.exit(2);
}

/** The seeded text: short English sentences, 12 words each. */
function makeText(n: number): string[] {
  const words = 'the quick brown fox jumps over a lazy dog near river bank while seven children watched from their small wooden boat and laughed at morning light'.split(' ');
  let seed = 1;
  const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return Array.from({ length: n }, () => {
    const s = Array.from({ length: 12 }, () => words[Math.floor(rnd() * words.length)]!).join(' ');
    return `${s[0]!.toUpperCase()}${s.slice(1)}.`;
  });
}
const sentences = makeText(SENTENCES);
const text = sentences.join(' ');

/** CPU ms (user+system, all threads) of a process from /proc; `children` adds its waited-for children's. */
function cpuMs(pid: number | 'self', children = false): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const own = Number(f[11]) + Number(f[12]);
  return ((children ? Number(f[13]) + Number(f[14]) : own) * 1000) / TICK;
}
const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

// ---- stages, in a child process of its own (the library has one state per process) ----------------

/** CPU ms per audio second of each stage of the engine side, measured from the sources (see STAGE_NOTE). */
interface StageFigures {
  synthesize: number;
  resample: number;
  engine: number;
  engineStreamed: number;
  engineReplayed: number;
  /** engineReplayed − resample, pass by pass: word timing, sentence assembly, framing (and their garbage). */
  wordTimingFraming: number;
  wire: number;
}

const STAGE_NOTE = `stages (ms of CPU per second of 48 kHz audio, this process's CPU over one stage at a time, from the sources):
  synthesize = the system library through espeak-system.ts (koffi async call, a callback hop per 100 ms or, for a voice without echo or Klatt at ≤ 250 wpm, per 1 s; samples copied);
  resample   = resampleInt16 22.05→48 kHz of each sentence (src/audio/resampler.ts);
  engine     = createEspeakTtsEngine (system library) up to framed PCM, the text at once (POST): synthesize + resample + word timing + framing;
  engineReplayed = the same (text at once) with the library's output of each sentence recorded and replayed at once: the engine without espeak and its glue;
  wordTimingFraming = engineReplayed − resample, pass by pass (${REPLAY_PASSES} alternated passes of each; resample and engineReplayed are their medians too);
  engineStreamed = the same, the text in 4-word messages (the WebSocket run): spoken in phrases a few words behind, more and shorter syntheses;
  wire       = serializeTtsAudioMessage of each 80 ms frame (base64 + JSON line; not the socket write)`;

async function stagesChild(): Promise<void> {
  const { loadSystemEspeak } = await import('../src/engines/espeak-system.js');
  const { resampleInt16 } = await import('../src/audio/resampler.js');
  const { createEspeakTtsEngine } = await import('../src/engines/espeak-tts.js');
  const { serializeTtsAudioMessage } = await import('../src/protocol/parse.js');
  const cpu = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const w = await loadSystemEspeak();
  w.set_voice(espeakVoiceName);
  w.set_rate(voiceParams.rate);
  w.set_pitch(voiceParams.pitch);
  w.set_range(voiceParams.range);
  const pcms: Int16Array[] = [];
  const frames: Int16Array[] = [];
  // The library's output per sentence, replayed instantly to measure the engine without espeak.
  type Recorded = Array<[Int16Array, Parameters<Parameters<typeof w.synthesize>[1]>[1]]>;
  const recorded = new Map<string, Recorded>();
  const replay = {
    set_voice: (v: string) => (w.set_voice(v), 0),
    set_rate: (x: number) => w.set_rate(x),
    set_pitch: (x: number) => w.set_pitch(x),
    set_range: (x: number) => w.set_range(x),
    get_samplerate: () => w.get_samplerate(),
    async synthesize(t: string, cb: Parameters<typeof w.synthesize>[1]): Promise<void> {
      let r = recorded.get(t);
      if (r === undefined) {
        // A piece not recorded yet (a phrase cut): recorded on the warm-up pass, replayed on the measured one.
        const got: Recorded = [];
        await w.synthesize(t, (x, e) => (got.push([x, e]), false));
        recorded.set(t, (r = got));
      }
      for (const [x, e] of r) cb(x, e);
    },
  };
  // The bench's voice (no voice: the engine's default, the first English catalog voice, as Emma).
  const context = { resolveVoice: async () => catalogVoice, resolvePronunciation: async () => undefined };
  const replayed = createEspeakTtsEngine(context, { worker: replay });
  const engine = createEspeakTtsEngine(context, { library: 'system' });
  const once = async (): Promise<StageFigures> => {
    pcms.length = 0;
    frames.length = 0;
    let c0 = cpu();
    for (const t of sentences) {
      const parts: Int16Array[] = [];
      const got: Recorded = [];
      await w.synthesize(t, (x, e) => (parts.push(x), got.push([x, e]), false));
      recorded.set(t, got);
      const pcm = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
      let o = 0;
      for (const p of parts) (pcm.set(p, o), (o += p.length));
      pcms.push(pcm);
    }
    const synthesize = cpu() - c0;
    // As POST gives it: the whole text at once, spoken sentence by sentence.
    c0 = cpu();
    const st = await engine.open({ modelName: 'default', jsonConfig: {} } as never, (e) => void (e.type === 'audio' && frames.push(e.pcm)));
    await st.text(text);
    await st.end();
    const whole = cpu() - c0;
    // As the WebSocket run gives it: 4-word messages, spoken in phrases a few words behind.
    c0 = cpu();
    let n = 0;
    const ws = await engine.open({ modelName: 'default', jsonConfig: {} } as never, (e) => void (e.type === 'audio' && n++));
    for (let i = 0; i < words.length; i += 4) await ws.text(words.slice(i, i + 4).join(' '));
    await ws.end();
    const phrases = cpu() - c0;
    c0 = cpu();
    for (let i = 0; i < frames.length; i++) {
      const f = frames[i]!;
      serializeTtsAudioMessage(new Uint8Array(f.buffer, f.byteOffset, f.byteLength), { start_s: i * 0.08, stop_s: (i + 1) * 0.08, stream_id: 0 });
    }
    const wire = cpu() - c0;
    const seconds = frames.length * 0.08;
    // The resampler alone, and the engine on the recorded output (everything but espeak and its
    // glue), in alternated passes: their difference is the engine's own code.
    const resamples: number[] = [];
    const replays: number[] = [];
    const diffs: number[] = [];
    for (let k = 0; k < REPLAY_PASSES; k++) {
      c0 = cpu();
      for (const p of pcms) resampleInt16(p, 22050, 48000);
      resamples.push((cpu() - c0) / seconds);
      c0 = cpu();
      let r = 0;
      const rs = await replayed.open({ modelName: 'default', jsonConfig: {} } as never, (e) => void (e.type === 'audio' && r++));
      await rs.text(text);
      await rs.end();
      replays.push((cpu() - c0) / (r * 0.08));
      diffs.push(replays[k]! - resamples[k]!);
    }
    return { synthesize: synthesize / seconds, resample: median(resamples), engine: whole / seconds, engineStreamed: phrases / (n * 0.08), engineReplayed: median(replays), wordTimingFraming: median(diffs), wire: wire / seconds };
  };
  await once(); // warm: code compiled, voice loaded
  process.stdout.write(JSON.stringify(await once()) + '\n');
  process.exit(0);
}
const words = text.split(' ');
if (process.argv.includes('--stages-child')) await stagesChild();

/** One stages measurement in a fresh child process. */
function stagesRun(): Promise<StageFigures> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--stages-child', ...(quick ? ['--quick'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
    stopWithBench(c);
    let out = '';
    c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    c.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as StageFigures) : reject(new Error(`stages child exited ${code}`))));
  });
}

// ---- servers -----------------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'vw-tts-overhead-'));
/** Where `--profile` writes (TTS_PROF_DIR keeps the profiles after the run). */
const profDir = process.env.TTS_PROF_DIR ?? join(dir, 'prof');
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const store = await openStore({ data: join(dir, 'data') });
await store.migrate();
const org = await ensureOrganization(store, 'tts-overhead', { credits: 1_000_000_000 });
const key = (await createKey(store, org.id)).key;
await store.close();

interface Server {
  name: string;
  child: ChildProcess;
  http: string;
  prof: string;
  key: string;
}

/** Each other build's data folder and key ({@link otherBuildKey}), made once. */
const otherData = new Map<string, { data: string; key: string }>();
function dataOf(cli: string): { data: string; key: string } {
  if (cli === cliJs) return { data: join(dir, 'data'), key };
  let d = otherData.get(cli);
  if (d === undefined) {
    const data = join(dir, `data-${otherData.size + 1}`);
    d = { data, key: otherBuildKey(cli, data, 'tts-overhead') };
    otherData.set(cli, d);
  }
  return d;
}

const started: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
});

function start(name: string, cli: string, tts: string): Promise<Server> {
  const prof = join(profDir, name.replace(/\W+/g, '-'));
  const nodeArgs = profile ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [];
  const own = dataOf(cli);
  const ready = spawnServer(name, [...nodeArgs, cli, 'serve', '--data', own.data, '--tts', tts, '--stt', 'tone', '--port', '0', '--no-bootstrap']);
  void ready.then(({ child }) => started.push(child), () => undefined);
  return ready.then(({ child, url }) => ({ name, child, http: url, prof, key: own.key }));
}
async function stop(s: Server): Promise<void> {
  s.child.removeAllListeners('exit');
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  const t = setTimeout(() => s.child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(t);
}

/** One WebSocket request: the text in 4-word messages, all sent at once; seconds of audio back. */
function wsRun(s: Server, words: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${s.http.replace(/^http/, 'ws')}/speech/tts`, { headers: { 'x-api-key': s.key }, perMessageDeflate: false });
    let bytes = 0;
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'setup', output_format: 'pcm', ...(voiceUid === '' ? {} : { voice_id: voiceUid }) }));
      for (let i = 0; i < words.length; i += 4) ws.send(JSON.stringify({ type: 'text', text: words.slice(i, i + 4).join(' ') }));
      ws.send('{"type":"end_of_stream"}');
    });
    ws.on('message', (d: Buffer) => {
      const m = JSON.parse(d.toString()) as { type: string; audio?: string; message?: string };
      if (m.type === 'audio') bytes += Buffer.byteLength(m.audio!, 'base64');
      else if (m.type === 'end_of_stream') ws.close();
      else if (m.type === 'error') reject(new Error(`${s.name} ws: ${m.message}`));
    });
    ws.on('close', () => resolve(bytes / 2 / 48000));
    ws.on('error', reject);
  });
}

/** One POST request, pcm, only the audio (`temp` 0: the deterministic path); seconds of audio back. */
async function postRun(s: Server, t: string, temp?: number): Promise<number> {
  const r = await fetch(`${s.http}/post/speech/tts`, {
    method: 'POST',
    headers: { 'x-api-key': s.key, 'content-type': 'application/json' },
    body: JSON.stringify({ text: t, output_format: 'pcm', only_audio: true, ...(voiceUid === '' ? {} : { voice_id: voiceUid }), ...(temp === undefined ? {} : { json_config: { temp } }) }),
  });
  if (!r.ok) throw new Error(`${s.name} post: ${r.status} ${await r.text()}`);
  return (await r.arrayBuffer()).byteLength / 2 / 48000;
}

// ---- the engine alone ----------------------------------------------------------------------------

/** The espeak-ng command on the text: its CPU (children of this process) per second of its audio. */
function commandRun(): number {
  const before = cpuMs('self', true);
  const r = spawnSync('espeak-ng', ['--stdout', text], { maxBuffer: 1 << 30 });
  if (r.status !== 0) return NaN;
  return (cpuMs('self', true) - before) / ((r.stdout.length - 44) / 2 / 22050);
}

/** The loops' clock, evaluated in their threads: this thread's CPU time in ms (Node 20 has no process.threadCpuUsage), from the scheduler's runtime in ns. */
const THREAD_MS = "const threadMs = () => Number(require('node:fs').readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;";

/**
 * The system library through koffi, one synchronous espeak_Synth per sentence (in a worker
 * thread: the library has one state per process, and this process's servers are children).
 * Samples are copied out of the library's buffer, as the server must.
 */
const LIBRARY_LOOP = `
const { parentPort, workerData } = require('node:worker_threads');
${THREAD_MS}const koffi = require(workerData.koffi);
const so = koffi.load('libespeak-ng.so.1');
const event = koffi.struct({ type: 'int', unique_identifier: 'uint', text_position: 'int', length: 'int', audio_position: 'int', sample: 'int', user_data: 'void *', id: 'int64_t' });
const cbT = koffi.pointer(koffi.proto('int', ['int16_t *', 'int', koffi.pointer(event)]));
so.func('int espeak_Initialize(int, int, const char *, int)')(2, 100, null, 0x8000);
so.func('int espeak_SetVoiceByName(const char *)')(workerData.voice);
const setParameter = so.func('int espeak_SetParameter(int, int, int)');
setParameter(1, workerData.rate, 0);
setParameter(3, workerData.pitch, 0);
setParameter(4, workerData.range, 0);
let n = 0;
const cb = koffi.register((wav, k) => { if (k > 0) { n += k; new Int16Array(koffi.view(wav, k * 2).slice(0)); } return 0; }, cbT);
so.func('espeak_SetSynthCallback', 'void', [cbT])(cb);
const synth = so.func('int espeak_Synth(const char *, size_t, unsigned int, int, unsigned int, unsigned int, void *, void *)');
parentPort.on('message', (sentences) => {
  n = 0;
  const c0 = threadMs();
  for (const s of sentences) synth(s, Buffer.byteLength(s) + 1, 0, 1, 0, 1, null, null);
  parentPort.postMessage({ ms: threadMs() - c0, seconds: n / 22050 });
});
`;

/** The WebAssembly build in a tight loop (its own cost): a worker thread, as the server runs it. */
const WASM_LOOP = `
const { parentPort, workerData } = require('node:worker_threads');
${THREAD_MS}(async () => {
  const module = await (await import(workerData.url)).default();
  const w = new module.eSpeakNGWorker();
  w.set_voice('en-us');
  w.synthesize('a.', () => false);
  parentPort.on('message', (sentences) => {
    let n = 0;
    const c0 = threadMs();
    for (const s of sentences) w.synthesize(s, (samples) => { n += samples.length; return false; });
    parentPort.postMessage({ ms: threadMs() - c0, seconds: n / 22050 });
  });
  parentPort.postMessage('ready');
})();
`;

function loopWorker(source: string, workerData: unknown, waitReady: boolean): Promise<(s: string[]) => Promise<number>> {
  const w = new Worker(source, { eval: true, workerData });
  w.unref();
  const ask = (s: string[]): Promise<number> =>
    new Promise((resolve, reject) => {
      w.once('message', (m: { ms: number; seconds: number }) => resolve(m.ms / m.seconds));
      w.once('error', reject);
      w.postMessage(s);
    });
  if (!waitReady) return Promise.resolve(ask);
  return new Promise((resolve, reject) => {
    w.once('message', () => resolve(ask));
    w.once('error', reject);
  });
}

// ---- profiles ------------------------------------------------------------------------------------

/**
 * Stages by the nearest marked function on a sample's stack (names survive the bundle). Checked
 * in order on each frame, innermost first, so a base64 call inside the wire code is the wire.
 */
const STAGES: Array<[string, RegExp]> = [
  ['resample', /^(resampleInt16|resample|PolyphaseCore|runFolded|runPolyphase|roundToInt16|scanFloat32|kernelRow|designKernel)$/],
  ['wire (base64, JSON line, write)', /^(encodeBase64|encodeBase64Js|serializeTtsAudioMessage|handBuiltBase64|audioSpan|send|sendFrame|frame|write|writeOrBuffer|_write|doWrite|writeGeneric|writev|_writev|toString|stringify)$/],
  ['session + pcm encoding', /^(encode|onEngine|emit|step|apply|deliver)$/],
  ['framing', /^(push|pad)$/],
  ['word timing + sentence assembly', /^(speakOne|firstSound|lastSound|peak|fillMissingWords|speak|text|phraseCut|splitSentences|spokenForm)$/],
  ['engine glue (koffi / WASM thread messages)', /^(onAudio|onMessage|run|pump|enqueue|synthesize|rc)$/],
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

/** Main-thread ms by stage, from every profile written under `profDir` (the main thread's is the largest). */
function stagesOf(prof: string): Map<string, number> | undefined {
  if (!existsSync(prof)) return undefined;
  const files = readdirSync(prof).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return undefined;
  // One file per thread: the main thread's holds the server's HTTP/WebSocket work.
  const main = files.map((f) => JSON.parse(readFileSync(join(prof, f), 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }).find((p) => p.nodes.some((n) => n.callFrame.functionName === 'onAudio' || n.callFrame.functionName === 'onMessage' || n.callFrame.url.includes('cli.js')));
  if (!main) return undefined;
  const parent = new Map<number, number>();
  for (const n of main.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(main.nodes.map((n) => [n.id, n]));
  const stageOf = new Map<number, string>();
  const classify = (id: number): string => {
    const known = stageOf.get(id);
    if (known !== undefined) return known;
    const n = byId.get(id)!;
    const f = n.callFrame.functionName;
    let s: string | undefined;
    if (f === '(idle)') s = 'idle';
    else if (f === '(garbage collector)') s = 'GC';
    else if (f === '(program)') s = 'other';
    else if (f.startsWith('wasm-function')) s = 'resample'; // the main thread's one WebAssembly module (espeak's runs in its thread)
    else for (const [name, re] of STAGES) if (re.test(f) && (n.callFrame.url === '' || /voicewire|dist|src/.test(n.callFrame.url) || name.startsWith('wire'))) {
      s = name;
      break;
    }
    if (s === undefined) {
      const p = parent.get(id);
      s = p === undefined ? 'other' : classify(p);
    }
    stageOf.set(id, s);
    return s;
  };
  const out = new Map<string, number>();
  for (let i = 0; i < main.samples.length; i++) {
    const s = classify(main.samples[i]!);
    out.set(s, (out.get(s) ?? 0) + main.timeDeltas[i]! / 1000);
  }
  return out;
}

// ---- the rounds ----------------------------------------------------------------------------------

const builds: Array<[string, string]> = [['after', cliJs], ...(baseCli ? ([['before', baseCli]] as Array<[string, string]>) : [])];
/**
 * A new server process per build and library every round (`TTS_SAME_SERVERS=1`, or `--profile`,
 * keeps one for the whole run): on this 2-core machine, two processes of the same build measured
 * 1 ms per audio second apart for a whole run (where the kernel put their main and synthesis
 * threads, most likely), more than the differences this bench looks for.
 */
const freshServers = !profile && process.env.TTS_SAME_SERVERS !== '1';
const kinds: Array<[name: string, cli: string, tts: string]> = [];
for (const [b, cli] of builds) for (const lib of ['system', 'wasm']) kinds.push([`${b} ${lib}`, cli, `espeak-${lib}`]);
/** A started server, warmed up: its engine loaded and its code compiled before it is measured. */
async function warmServer(name: string, cli: string, tts: string): Promise<Server> {
  const s = await start(name, cli, tts);
  // TTS_WARM sentences through each way first (default 3): V8 compiles the hot path in tiers over
  // the first tens of seconds of audio, on threads whose CPU /proc counts; a long-lived server has paid it.
  const warm = sentences.slice(0, WARM_SENTENCES).join(' ');
  await postRun(s, warm);
  await wsRun(s, warm.split(' '));
  // temp 0's own instance (the npm build loads a second one on first use).
  await postRun(s, sentences[0]!, 0);
  return s;
}
const servers: Server[] = [];
for (const [name, cli, tts] of kinds) servers.push(await warmServer(name, cli, tts));
const requireHere = createRequire(import.meta.url);
const libraryLoop = await loopWorker(LIBRARY_LOOP, { koffi: requireHere.resolve('koffi'), voice: espeakVoiceName, rate: voiceParams.rate, pitch: voiceParams.pitch, range: voiceParams.range }, false);
const wasmUrl = (await import('node:url')).pathToFileURL(requireHere.resolve('@echogarden/espeak-ng-emscripten')).href;
const wasmLoop = await loopWorker(WASM_LOOP, { url: wasmUrl }, true);
// Warm: the WebAssembly code is compiled in tiers (its first run of a text costs ~3× its later ones).
await libraryLoop(sentences);
await wasmLoop(sentences);

const fig: Record<string, number[]> = {};
const add = (k: string, v: number): void => void (fig[k] ??= []).push(v);
console.log(`bench/tts-overhead: voice ${voiceUid || 'default (Emma)'} = ${espeakVoiceName} at ${voiceParams.rate} wpm`);
console.log(`bench/tts-overhead: ${machine()}; ${ROUNDS} rounds of ${SENTENCES} sentences (${text.length} characters); load ${load()}`);
for (let r = 0; r < ROUNDS; r++) {
  const order = [...servers.map((s) => s as Server | string), 'command', 'library', 'wasm-build', 'stages'];
  const k = r % order.length;
  for (let item of [...order.slice(k), ...order.slice(0, k)]) {
    if (item === 'command') add('engine: espeak-ng command', commandRun());
    else if (item === 'library') add('engine: system library (koffi, tight loop)', await libraryLoop(sentences));
    else if (item === 'wasm-build') add('engine: WebAssembly build (tight loop)', await wasmLoop(sentences));
    else if (item === 'stages') for (const [k, v] of Object.entries(await stagesRun())) add(`stage: ${k}`, v);
    else if (typeof item !== 'string') {
      if (freshServers && r > 0) {
        const i = servers.indexOf(item);
        await stop(item);
        servers[i] = item = await warmServer(...kinds[i]!);
      }
      const pid = item.child.pid!;
      for (const way of ['ws', 'post', 'post temp 0'] as const) {
        const c0 = cpuMs(pid);
        // temp 0 (§2.8, deterministic) on a quarter of the text: the system library loads a fresh copy of itself per sentence.
        const seconds = way === 'ws' ? await wsRun(item, words) : way === 'post' ? await postRun(item, text) : await postRun(item, sentences.slice(0, Math.ceil(SENTENCES / 4)).join(' '), 0);
        const c = cpuMs(pid) - c0;
        add(`${item.name} ${way}`, c / seconds);
      }
    }
  }
  console.log(`  round ${r + 1}/${ROUNDS} done, load ${load()}`);
}

const lines: string[] = [];
const say = (s: string): void => {
  lines.push(s);
  console.log(s);
};
say(`\nTTS overhead over the engine: ${machine()}, load ${load()}; voice ${voiceUid || 'default (Emma)'} = ${espeakVoiceName} at ${voiceParams.rate} wpm`);
say(`${ROUNDS} alternating rounds, ${SENTENCES} sentences (${text.length} characters) a run; median ms of CPU per second of audio (p10-p90 across rounds)`);
const engine = median(fig['engine: system library (koffi, tight loop)'] ?? []);
for (const [k, xs] of Object.entries(fig)) {
  const s = [...xs].sort((a, b) => a - b);
  const ratio = k.startsWith('engine') ? '' : `  ${(median(xs) / engine).toFixed(2)}× the system library alone`;
  say(`  ${k.padEnd(46)} ${median(xs).toFixed(2).padStart(6)}  (${s[0]!.toFixed(2)}–${s[s.length - 1]!.toFixed(2)})${ratio}`);
}

// All the CPU of each server's life (start-up and warm-up too), the base of the profile's shares.
const lifeCpu = new Map(servers.map((s) => [s.name, cpuMs(s.child.pid!)]));const m = (k: string): number => median(fig[k] ?? []);
say(`\nWhere the system library's server CPU goes (medians above; ms per audio second):`);
say(`  engine alone (library, tight loop)                ${m('engine: system library (koffi, tight loop)').toFixed(2)}`);
say(`  glue: async call + callback hops + copies          ${(m('stage: synthesize') - m('engine: system library (koffi, tight loop)')).toFixed(2)}`);
say(`  resample 22.05→48 kHz                              ${m('stage: resample').toFixed(2)}`);
say(`  word timing + sentence assembly + framing + GC      ${m('stage: wordTimingFraming').toFixed(2)}  (engine − synthesize − resample: ${(m('stage: engine') - m('stage: synthesize') - m('stage: resample')).toFixed(2)})`);
say(`  wire encoding (base64 + JSON line)                 ${m('stage: wire').toFixed(2)}`);
say(`  phrases instead of sentences (4-word messages)     ${(m('stage: engineStreamed') - m('stage: engine')).toFixed(2)}`);
say(`  the rest (session, socket/HTTP writes, GC): ws ${(m('after system ws') - m('stage: engineStreamed') - m('stage: wire')).toFixed(2)}, post ${(m('after system post') - m('stage: engine')).toFixed(2)} (post sends raw PCM: no wire encoding)`);
say(STAGE_NOTE);

for (const s of servers) await stop(s);
if (profile) {
  say("\nMain-thread profile by stage: ms over each server's life (start-up, warm-up, rounds), share of its /proc CPU over the same life. Wall-clock samples: a thread preempted right after it hands work to another counts as busy, so take these from a quiet machine.");
  for (const s of servers) {
    const st = stagesOf(s.prof);
    if (!st) {
      say(`  ${s.name}: no profile`);
      continue;
    }
    const total = lifeCpu.get(s.name)!;
    const busy = [...st].filter(([k]) => k !== 'idle').reduce((a, [, v]) => a + v, 0);
    const parts = [...st].filter(([k]) => k !== 'idle').sort((a, b) => b[1] - a[1]);
    say(`  ${s.name}: process ${total.toFixed(0)} ms, main thread ${busy.toFixed(0)} ms, off the main thread (synthesis, libuv) ~${Math.max(0, total - busy).toFixed(0)} ms`);
    for (const [k, v] of parts) say(`    ${k.padEnd(46)} ${v.toFixed(0).padStart(6)} ms  ${((100 * v) / total).toFixed(1).padStart(5)} %`);
  }
}
saveFile('tts-overhead.txt', lines.join('\n') + '\n');
process.exit(0);
