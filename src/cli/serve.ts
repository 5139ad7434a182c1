/**
 * `voicewire serve`: the reference service (src/server) on one machine.
 *
 *   voicewire serve [--host 127.0.0.1] [--port 8080] [--data DIR] [--store URL] [--tts ENGINE]
 *                   [--stt ENGINE] [--core-url URL] [--region NAME] [--no-bootstrap] [--workers N]
 *                   [--connections-per-address N] [--trusted-proxies LIST] [--tts-model DIR] [--tts-model-type TYPE]
 *                   [--stt-model PATH] [--stt-model-type TYPE] [--vad-model FILE]
 *                   [--instance-heartbeat-ms N] [--instance-timeout-ms N]
 *
 * stdout carries human lines only: at first start the keys, each alone on its line
 * (`API key (x-api-key): vw_…`, `instance-admin key (x-api-key on /statusz, /drain): vw_…`), then
 * `listening on http://HOST:PORT/api` once connections are accepted (scripts wait for it). The JSON
 * logs go to stderr and never hold a key (a log shipper would store them). SIGTERM and
 * SIGINT drain (readiness 503, new sessions refused, live ones finish within the grace period) and
 * exit 0. `--store memory:` keeps everything in memory (tests and demos: nothing persists).
 * `--workers N` (default 1: one process, no cluster) runs N worker processes on one port
 * (./serve-workers.ts).
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import pkg from '../../package.json' with { type: 'json' };
import { VoicewireError } from '../util/errors.js';
import { createVoiceServer } from '../server/server.js';
import { DEFAULT_LIMITS } from '../server/config.js';
import { DEFAULT_CREDITS, bootstrap } from '../server/bootstrap.js';
import { openStore } from '../server/store/open.js';
import { catalogVoices, chooseTtsEngine, registerSttEngine, registerTtsEngine, sherpaSttEntry, sherpaTtsEntry, sttEngineFromPath } from '../engines/registry.js';
import { SHERPA_STT_TYPES, SHERPA_TTS_TYPES, type SherpaSttType, type SherpaTtsType } from '../engines/sherpa-model.js';
import { PROTOCOL_LANGUAGES } from '../protocol/validate.js';
import { MemoryStore } from '../server/store/memory-store.js';
import { parseProxyEntry } from '../server/client-address.js';
import { listenForStop, type StopSignal } from './stop-signals.js';
import type { Store } from '../server/store/store.js';
import type { CliSubcommand } from './main.js';
import { clusterMetricsText, isServeWorker, leaveCluster, runPrimary, shareMetrics } from './serve-workers.js';

/** Opens the store of `--data DIR` / `--store URL` (env VOICEWIRE_DATA / VOICEWIRE_STORE). */
export async function openCliStore(values: { data?: string | undefined; store?: string | undefined }): Promise<Store> {
  const store = values.store ?? process.env['VOICEWIRE_STORE'];
  const data = values.data ?? process.env['VOICEWIRE_DATA'] ?? './voicewire-data';
  if (store === 'memory:') return new MemoryStore();
  const s = await openStore(store === undefined ? { data } : { data, store });
  await s.migrate();
  return s;
}

function usage(message: string): VoicewireError {
  return new VoicewireError('CLI_USAGE', `${message} (see voicewire serve --help)`);
}

export const SERVE_USAGE = `usage: voicewire serve [--host 127.0.0.1] [--port 8080] [--data DIR] [--store URL]
                       [--tts ENGINE] [--stt ENGINE] [--core-url URL] [--region NAME]
                       [--tts-model DIR] [--tts-model-type TYPE] [--stt-model PATH] [--stt-model-type TYPE]
                       [--stt-language LIST] [--vad-model FILE]
                       [--no-bootstrap] [--workers N] [--connections-per-address N]
                       [--trusted-proxies LIST] [--instance-heartbeat-ms N] [--instance-timeout-ms N]
  --workers: N processes sharing the port (Node cluster; default 1). SIGTERM drains them all.
  --connections-per-address: open connections one client address may hold, per process (default
    256). Behind a load balancer named in --trusted-proxies it counts the client's address.
  --trusted-proxies LIST: comma-separated addresses or CIDR blocks of the load balancers whose
    X-Forwarded-For names the client (10.0.0.5,10.0.0.0/8,fd00::/8); from any other address the
    header is ignored. Default none.
  --instance-heartbeat-ms N: how often this instance (each worker is one) writes its heartbeat and
    what its open credit holds delivered, and settles the holds of dead instances (default 2000).
  --instance-timeout-ms N: an instance silent this long is dead: its open holds are settled to what
    they had delivered (default 20000; at least twice the heartbeat).
  --tts: espeak-wasm (npm @echogarden/espeak-ng-emscripten) | espeak-system (apt-get install
    libespeak-ng1) | espeak (default: the system library when it loads, else the WebAssembly
    build, the cheaper first; neither: serve refuses to start) | sherpa-onnx (with --tts-model) | tone (test tones, only when asked for).
  --stt: pocketsphinx (default) | sherpa-onnx | tone.
  --tts-model DIR: a sherpa-onnx voice folder (Piper, VITS, Kokoro); implies --tts sherpa-onnx.
  --stt-model PATH: with --stt sherpa-onnx (or --stt-model-type), a sherpa-onnx model folder (NeMo or
    Zipformer CTC, Whisper, SenseVoice, Paraformer, Moonshine, transducer, or a streaming NeMo CTC,
    whose words come while the audio streams); else a pocketsphinx
    model directory, or a module whose default export is an SttEngine.
  --tts-model-type ${SHERPA_TTS_TYPES.join('|')}; --stt-model-type ${SHERPA_STT_TYPES.join('|')}:
    the model family, when detecting it from the folder's files and metadata is not enough.
  --stt-language LIST: with --stt sherpa-onnx, the languages (of en,fr,de,es,pt) a model that
    declares none serves (default en), or a narrower set than the model declares.
  --vad-model FILE: a Silero VAD (v4 or v5: sherpa-onnx's silero_vad.onnx, or the one in npm
    @livekit/agents-plugin-silero) for every --stt engine: the step messages' inactivity
    probabilities, and so every end-of-turn (SDK, voicewire/livekit, /v1/realtime server_vad), come
    from it instead of the WebRTC VAD; with --stt sherpa-onnx it also cuts the speech segments the
    model decodes. Run by sherpa-onnx (npm sherpa-onnx-node) on one worker thread per process (two
    with --stt sherpa-onnx), one small ONNX session per live STT stream.
  A sherpa-onnx folder (and a --vad-model file) is loaded and run once in a child process first: one
    that cannot be loaded stops the start with MODEL_INVALID, naming the folder or file and the cause.
  env: VOICEWIRE_DATA, VOICEWIRE_STORE, VOICEWIRE_PORT, VOICEWIRE_CONNECTIONS_PER_ADDRESS,
    VOICEWIRE_TRUSTED_PROXIES mirror --data, --store, --port, --connections-per-address,
    --trusted-proxies.`;

export const serveCommand: CliSubcommand = {
  async run(argv) {
    let values;
    try {
      ({ values } = parseArgs({
        args: [...argv],
        options: {
          host: { type: 'string' },
          port: { type: 'string' },
          data: { type: 'string' },
          store: { type: 'string' },
          tts: { type: 'string' },
          stt: { type: 'string' },
          'stt-model': { type: 'string' },
          'tts-model': { type: 'string' },
          'tts-model-type': { type: 'string' },
          'stt-model-type': { type: 'string' },
          'stt-language': { type: 'string' },
          'vad-model': { type: 'string' },
          'core-url': { type: 'string' },
          region: { type: 'string' },
          'no-bootstrap': { type: 'boolean' },
          workers: { type: 'string' },
          'connections-per-address': { type: 'string' },
          'trusted-proxies': { type: 'string' },
          'instance-heartbeat-ms': { type: 'string' },
          'instance-timeout-ms': { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
        strict: true,
      }));
    } catch (err) {
      throw usage((err as Error).message);
    }
    if (values.help) {
      process.stdout.write(`${SERVE_USAGE}\n`);
      return 0;
    }
    const portText = values.port ?? process.env['VOICEWIRE_PORT'] ?? '8080';
    const port = Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw usage(`--port must be 0 to 65535, got ${portText}`);
    const host = values.host ?? '127.0.0.1';
    const workersText = values.workers ?? '1';
    const workers = Number(workersText);
    if (!Number.isInteger(workers) || workers < 1 || workers > 256) throw usage(`--workers must be 1 to 256, got ${workersText}`);
    const perAddressText = values['connections-per-address'] ?? process.env['VOICEWIRE_CONNECTIONS_PER_ADDRESS'];
    const perAddress = perAddressText === undefined ? undefined : Number(perAddressText);
    if (perAddress !== undefined && !(Number.isSafeInteger(perAddress) && perAddress >= 1)) {
      throw usage(`--connections-per-address must be a whole number ≥ 1, got ${perAddressText}`);
    }
    const limits: { connectionsPerAddress?: number; instanceHeartbeatMs?: number; instanceTimeoutMs?: number } = {};
    if (perAddress !== undefined) limits.connectionsPerAddress = perAddress;
    for (const [flag, key] of [
      ['instance-heartbeat-ms', 'instanceHeartbeatMs'],
      ['instance-timeout-ms', 'instanceTimeoutMs'],
    ] as const) {
      const text = values[flag];
      if (text === undefined) continue;
      const n = Number(text);
      if (!(Number.isSafeInteger(n) && n >= 1 && n <= 2 ** 31 - 1)) throw usage(`--${flag} must be a whole number of ms from 1 to 2147483647, got ${text}`);
      limits[key] = n;
    }
    const heartbeat = limits.instanceHeartbeatMs ?? DEFAULT_LIMITS.instanceHeartbeatMs;
    const timeout = limits.instanceTimeoutMs ?? DEFAULT_LIMITS.instanceTimeoutMs;
    if (timeout < 2 * heartbeat) throw usage(`--instance-timeout-ms (${timeout}) must be at least twice --instance-heartbeat-ms (${heartbeat})`);
    const proxiesText = values['trusted-proxies'] ?? process.env['VOICEWIRE_TRUSTED_PROXIES'];
    const trustedProxies = proxiesText === undefined ? [] : proxiesText.split(',').map((p) => p.trim()).filter((p) => p !== '');
    for (const p of trustedProxies) {
      try {
        parseProxyEntry(p);
      } catch (err) {
        throw usage(`--trusted-proxies: ${(err as Error).message}`);
      }
    }
    const worker = isServeWorker();
    const primary = workers > 1 && !worker;
    if (workers > 1 && (values.store ?? process.env['VOICEWIRE_STORE']) === 'memory:') {
      throw usage('--workers above 1 needs a shared store (a --data folder or a postgres:// --store), not memory:');
    }
    // Listened to before anything can take time (./stop-signals.ts); the primary of --workers has its own.
    const signals = primary ? undefined : listenForStop();
    // Model folders are checked before the store is opened: a refused start leaves no data behind.
    // Before the store is opened: a machine that cannot speak is told so before anything is written.
    const tts = await chooseTtsEngine(await sherpaTts(values));
    let stt = values.stt;
    const sherpaStt = stt === 'sherpa-onnx' || values['stt-model-type'] !== undefined;
    if (!sherpaStt && values['stt-language'] !== undefined) throw usage('--stt-language is for --stt sherpa-onnx');
    if (sherpaStt) {
      if (stt !== undefined && stt !== 'sherpa-onnx') throw usage(`--stt-model-type is for --stt sherpa-onnx, not --stt ${stt}`);
      const type = values['stt-model-type'];
      if (type !== undefined && !(SHERPA_STT_TYPES as readonly string[]).includes(type)) throw usage(`--stt-model-type must be one of ${SHERPA_STT_TYPES.join(', ')}, got ${type}`);
      if (values['stt-model'] === undefined) throw usage('--stt sherpa-onnx needs --stt-model DIR (a sherpa-onnx model folder)');
      // MODEL_INVALID as it is: it names the folder and the cause.
      const langs = values['stt-language']?.split(',').map((l) => l.trim());
      if (langs !== undefined && (langs.length === 0 || !langs.every((l) => (PROTOCOL_LANGUAGES as readonly string[]).includes(l)))) throw usage(`--stt-language must be a comma-separated list of ${PROTOCOL_LANGUAGES.join(', ')}, got ${values['stt-language']}`);
      registerSttEngine('sherpa-onnx', await sherpaSttEntry(values['stt-model'], type as SherpaSttType | undefined, langs, values['vad-model']));
      stt = 'sherpa-onnx';
    }
    const store = await openCliStore(values);
    const logger = pino(
      { level: process.env['VOICEWIRE_LOG_LEVEL'] ?? 'info', base: { service: 'voicewire', pid: process.pid, ...(primary ? { role: 'primary' } : worker ? { role: 'worker' } : {}) } },
      pino.destination(2),
    );
    // Workers leave the first start to the primary, which bootstraps before forking them.
    if (!values['no-bootstrap'] && !worker) {
      const boot = await bootstrap(store);
      if (boot !== undefined) {
        // stdout, not the log stream: shown once to the person who started the service.
        process.stdout.write(
          [
            `voicewire: first start: organization "${boot.org}" created with ${DEFAULT_CREDITS} credits. These keys are shown once:`,
            `API key (x-api-key): ${boot.apiKey}`,
            `instance-admin key (x-api-key on /statusz, /drain): ${boot.adminKey}`,
            'More: voicewire keys create [--org NAME] (an organization\'s key) | voicewire keys create --admin (instance admin)',
            '',
          ].join('\n'),
        );
      }
    }
    if (primary) {
      await store.close();
      return runPrimary(workers, host, logger);
    }
    if (!sherpaStt && values['stt-model'] !== undefined) {
      const path = resolve(values['stt-model']);
      const st = statSync(path, { throwIfNoEntry: false });
      if (st === undefined) throw usage(`--stt-model ${values['stt-model']}: no such file or directory`);
      try {
        registerSttEngine('model', await sttEngineFromPath(path, st.isDirectory()));
      } catch (err) {
        throw usage(`--stt-model ${values['stt-model']}: ${(err as Error).message}`);
      }
      stt = 'model';
    }
    const server = await createVoiceServer({
      store,
      logger,
      version: pkg.version,
      processMetrics: true,
      tts,
      ...(stt !== undefined ? { stt } : {}),
      ...(values['core-url'] !== undefined ? { coreUrl: values['core-url'] } : {}),
      ...(values.region !== undefined ? { region: values.region } : {}),
      ...(values['vad-model'] !== undefined ? { vadModel: values['vad-model'] } : {}),
      environment: process.env['NODE_ENV'] ?? 'development',
      limits,
      trustedProxies,
      ...(worker ? { metricsText: clusterMetricsText } : {}),
    });
    if (worker) shareMetrics(server.context.metrics.registry);
    let bound: { port: number };
    try {
      bound = await server.listen(port, host);
    } catch (err) {
      await store.close().catch(() => undefined);
      throw listenError(err, host, port);
    }
    const shown = host.includes(':') ? `[${host}]` : host;
    // Under --workers the primary announces the shared port once.
    if (!worker) {
      process.stdout.write(startSummary(`http://${shown}:${bound.port}`, server.config, values));
      process.stdout.write(`listening on http://${shown}:${bound.port}/api\n`);
    }
    await new Promise<void>((resolve) => {
      let stopping = false;
      const stop = (signal: StopSignal): void => {
        if (stopping) {
          // A second Ctrl-C: stop now, cutting what is left.
          if (signal === 'SIGINT') void server.close();
          return;
        }
        stopping = true;
        logger.info({ signal }, 'shutting down');
        const live = server.context.sessions.live;
        // For a person at a terminal (Ctrl-C); stderr to a file or a log shipper holds JSON lines only.
        if (live > 0 && !worker && process.stderr.isTTY) {
          const grace = server.config.limits.drainGraceSeconds;
          process.stderr.write(`voicewire: draining ${live} live session${live === 1 ? '' : 's'}, up to ${grace} s; Ctrl-C again to stop now\n`);
        }
        void server.shutdown().then(async () => {
          await store.close();
          resolve();
        });
      };
      signals!.handle(stop);
    });
    signals!.dispose();
    // A worker's IPC channel to the primary would keep it alive.
    if (worker) leaveCluster();
    return 0;
  },
};

/**
 * `--tts sherpa-onnx --tts-model DIR [--tts-model-type TYPE]` (`--tts-model` alone implies the
 * engine): checks the folder in a child process and registers the engine. Returns the TTS engine name.
 */
async function sherpaTts(values: { tts?: string | undefined; 'tts-model'?: string | undefined; 'tts-model-type'?: string | undefined }): Promise<string | undefined> {
  const dir = values['tts-model'];
  const type = values['tts-model-type'];
  if (values.tts !== 'sherpa-onnx' && dir === undefined && type === undefined) return values.tts;
  if (values.tts !== undefined && values.tts !== 'sherpa-onnx') throw usage(`--tts-model and --tts-model-type are for --tts sherpa-onnx, not --tts ${values.tts}`);
  if (dir === undefined) throw usage('--tts sherpa-onnx needs --tts-model DIR (a sherpa-onnx voice folder)');
  if (type !== undefined && !(SHERPA_TTS_TYPES as readonly string[]).includes(type)) throw usage(`--tts-model-type must be one of ${SHERPA_TTS_TYPES.join(', ')}, got ${type}`);
  registerTtsEngine('sherpa-onnx', await sherpaTtsEntry(dir, type as SherpaTtsType | undefined));
  return 'sherpa-onnx';
}

/** A port in use (or below 1024 without the right) is said so, not reported as an internal error. */
function listenError(err: unknown, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE') return new VoicewireError('ADDRESS_IN_USE', `${host}:${port} is already in use (another voicewire serve?): stop it, or pick another port with --port`, { cause: err });
  if (code === 'EACCES') return new VoicewireError('ADDRESS_IN_USE', `${host}:${port} needs privileges this process does not have: pick a port above 1023 with --port`, { cause: err });
  if (code === 'EADDRNOTAVAIL') return new VoicewireError('ADDRESS_IN_USE', `${host} is not an address of this machine: pick another with --host`, { cause: err });
  return err;
}

/**
 * What a person starting the service needs, on stdout before the `listening on` line: where the
 * page and the API are, which engines speak which languages, where the data lives.
 */
function startSummary(origin: string, config: { tts: string; stt: string }, values: { data?: string | undefined; store?: string | undefined }): string {
  const byLanguage = new Map<string, number>();
  for (const v of catalogVoices(config.tts)) byLanguage.set(v.language, (byLanguage.get(v.language) ?? 0) + 1);
  const voices = [...byLanguage].map(([l, n]) => `${l} ${n}`).join(', ');
  const store = values.store ?? process.env['VOICEWIRE_STORE'];
  const where =
    store === 'memory:' ? 'in memory (nothing is kept)' : store !== undefined && /^postgres(ql)?:/.test(store) ? 'Postgres' : `${resolve(values.data ?? process.env['VOICEWIRE_DATA'] ?? './voicewire-data')} (SQLite)`;
  return [
    `voicewire ${pkg.version}`,
    `  page:    ${origin}/`,
    `  API:     ${origin}/api   reference: ${origin}/api/docs`,
    `  TTS:     ${config.tts} (voices: ${voices})`,
    `  STT:     ${config.stt}`,
    `  data:    ${where}`,
    `  keys:    voicewire keys create [--org NAME]; first-start keys are printed once, above`,
    '',
  ].join('\n');
}

export default serveCommand;
