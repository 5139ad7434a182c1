/**
 * The reference server: `node:http` + `ws`, a small core that routes and authenticates, with each
 * route group a module of its own over the library's runners (STYLE.md "The server").
 *
 * Lifecycle (a state machine you can test): serving → draining (POST /drain, SIGTERM via
 * {@link VoiceServer.shutdown}: /readyz 503, new sessions refused, live ones finish) → closed.
 */
import { createPageHandler, defaultPageDir } from './page.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { pino, type Logger, type DestinationStream } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { VoicewireError, toVoicewireError } from '../util/errors.js';
import { describeValue, functionArg, objectArg, optionsArg, stringArg } from '../util/args.js';
import { STT_ENGINES, TTS_ENGINES, catalogVoices, chooseTtsEngine, defaultEngineName, sttEngineEntry, ttsEngineEntry, type EngineContext } from '../engines/registry.js';
import { KeyedBudget, ReservedShares, STT_DECODER_BUDGET, limitSttStreams } from '../engines/budget.js';
import { POCKETSPHINX_CALLS } from '../engines/pocketsphinx-ffi.js';
import { connectionTenant, withTenant } from './tenant.js';
import type { SttEngine } from '../sessions/engine.js';
import type { Principal } from './auth.js';
import { resolveServerConfig, type ServerConfig, type ServerConfigInput } from './config.js';
import { authenticate } from './auth.js';
import { AuthCache, withAuthInvalidation } from './auth-cache.js';
import { listenAuthChanges } from './store/auth-changes.js';
import { meteredSttEngine, meteredTtsEngine } from './credits.js';
import { timedSttEngine, timedTtsEngine } from './engine-timeout.js';
import { createMetrics, type ServerMetrics } from './metrics.js';
import { SessionTracker, drainingError } from './sessions.js';
import { UploadBudget } from './upload-budget.js';
import { FfmpegBudget } from './ffmpeg-budget.js';
import { Router } from './router.js';
import { sendError, sendJson } from './http.js';
import { formatRestError } from '../protocol/rest.js';
import { failSocket, refuseUpgrade } from './ws.js';
import { StoreHealth, type StoreHealthOptions } from './store-health.js';
import { OpenHolds } from './open-holds.js';
import { PerAddressCount, TrustedProxies } from './client-address.js';
import type { RequestScope, RouteModule, ServerContext } from './context.js';
import type { Store } from './store/store.js';
import { storeErrorReason } from './store/validate.js';
import { probeRoutes } from './routes/probes.js';
import { ttsRoutes } from './routes/tts.js';
import { sttRoutes } from './routes/stt.js';
import { startSileroSteps, withSileroSteps } from '../engines/silero-steps.js';
import { accountRoutes, usageSummaryRoutes } from './routes/account.js';
import { voiceRoutes, coreVoiceRoutes } from './routes/voices.js';
import { withLibraryVoices } from '../engines/library-voices.js';
import { findVoice } from './voice-lookup.js';
import { VoiceCache, withVoiceCache } from './voice-cache.js';
import { withCatalogVoices } from './catalog-voices.js';
import { voiceDesignRoutes } from './routes/voice-design.js';
import { pronunciationRoutes, corePronunciationRoutes } from './routes/pronunciations.js';
import { createForwarder } from './routes/forward.js';
import { isOpenAIPath, matchOpenAIWs, serveOpenAI } from './routes/openai.js';
import { selectRealtimeProtocol } from './routes/openai/realtime.js';
import { s2sRoutes } from './routes/s2s.js';
import { openApiRoutes } from './routes/openapi.js';
import { registerNativeBase64 } from '../node/base64.js';
import { registerNativeOpus } from '../node/opus-native.js';

/** Options of {@link createVoiceServer}. */
export interface VoiceServerOptions extends ServerConfigInput {
  /** The store (required): `openStore(...)` for the CLI, `new MemoryStore()` in tests. */
  store: Store;
  /** A pino logger, or where JSON log lines go (default: stdout at level `info`). */
  logger?: Logger;
  logDestination?: DestinationStream;
  /** Version reported by /statusz. Default `0.0.0`. */
  version?: string;
  /** Collect Node's process metrics in /metrics (default false: tests run several servers). */
  processMetrics?: boolean;
  /** What /metrics answers (default: this server's registry); `serve --workers` gives the whole cluster's. */
  metricsText?: () => Promise<string>;
  /**
   * A Silero VAD file (`serve --vad-model`): every STT engine's `step` inactivity probabilities,
   * and so every end-of-turn read from them, come from it (src/engines/silero-steps.ts, one worker
   * thread), not from the WebRTC VAD. Checked in a child process at start (`MODEL_INVALID`).
   * Default: none.
   */
  vadModel?: string;
  /** The web page's folder, served at `/` (default: the built dist/web when present); null: no page. */
  pageDir?: string | null;
  /** Periodic store pings behind /readyz (src/server/store-health.ts; default every 1000 ms, 5000 ms timeout, down after 2 failures in a row). */
  storeHealth?: StoreHealthOptions;
}

/** A running (or ready to run) server. */
export interface VoiceServer {
  readonly config: ServerConfig;
  readonly context: ServerContext;
  /** Binds and accepts connections; resolves with the bound port (0 picks a free one). */
  listen(port: number, host?: string): Promise<{ port: number; host: string }>;
  /** Starts (true) or stops (false) draining (§3.1). */
  drain(enable: boolean): void;
  /**
   * Graceful stop: drain, wait until live sessions finish (at most `graceSeconds`, default the
   * config's `drainGraceSeconds`), then close. Resolves once closed.
   */
  shutdown(graceSeconds?: number): Promise<void>;
  /** Closes at once: every socket is cut, the store stays open (the caller owns it). */
  close(): Promise<void>;
}

const API = '/api';

/** Every method of {@link Store}: a store missing one is refused at start, not by the request that needs it. */
const STORE_METHODS: Record<keyof Store, true> = {
  migrate: true,
  ping: true,
  close: true,
  createOrganization: true,
  getOrganization: true,
  getOrganizationByName: true,
  countOrganizations: true,
  setCredits: true,
  debitCredits: true,
  usageSummary: true,
  createApiKey: true,
  findApiKeyByHash: true,
  getApiKey: true,
  listApiKeys: true,
  revokeApiKey: true,
  createToken: true,
  findToken: true,
  listVoices: true,
  getVoice: true,
  putVoice: true,
  updateVoice: true,
  deleteVoice: true,
  putCandidates: true,
  getCandidate: true,
  deleteCandidate: true,
  listDictionaries: true,
  getDictionary: true,
  putDictionary: true,
  deleteDictionary: true,
  reserveCredits: true,
  settleCredits: true,
  heartbeat: true,
  sweepOrphanHolds: true,
};

/** The options of {@link createVoiceServer} besides the configuration, checked before anything starts. */
function checkServerOptions(options: VoiceServerOptions): void {
  const store = objectArg(options.store, 'createVoiceServer: store');
  for (const m of Object.keys(STORE_METHODS)) functionArg((store as unknown as Record<string, unknown>)[m], `createVoiceServer: store.${m}`);
  if (options.logger !== undefined) {
    objectArg(options.logger, 'createVoiceServer: logger');
    for (const m of ['child', 'info', 'warn', 'error'] as const) functionArg(options.logger[m], `createVoiceServer: logger.${m}`);
  }
  if (options.logDestination !== undefined) functionArg(objectArg(options.logDestination, 'createVoiceServer: logDestination').write, 'createVoiceServer: logDestination.write');
  if (options.version !== undefined && typeof options.version !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `createVoiceServer: version must be a string, got ${describeValue(options.version)}`);
  if (options.processMetrics !== undefined && typeof options.processMetrics !== 'boolean') {
    throw new VoicewireError('INVALID_ARGUMENT', `createVoiceServer: processMetrics must be a boolean, got ${describeValue(options.processMetrics)}`);
  }
  if (options.pageDir !== undefined && options.pageDir !== null && typeof options.pageDir !== 'string') {
    throw new VoicewireError('INVALID_ARGUMENT', `createVoiceServer: pageDir must be a string or null, got ${describeValue(options.pageDir)}`);
  }
  optionsArg(options.storeHealth, 'createVoiceServer: storeHealth');
  if (options.metricsText !== undefined) functionArg(options.metricsText, 'createVoiceServer: metricsText');
  if (options.vadModel !== undefined) stringArg(options.vadModel, 'createVoiceServer: vadModel');
}

/**
 * A socket's error listener, made outside the upgrade handler: a closure made inside it would
 * keep the upgrade's request (headers and all) alive as long as the socket (issue 22: an idle
 * session's memory).
 */
function logWsError(log: Logger): (err: Error) => void {
  return (err) => log.info({ error: err.message }, 'websocket error');
}

/** Creates the server (nothing is bound until `listen`). Seeds the engine's catalog voices into the store. */
export async function createVoiceServer(options: VoiceServerOptions): Promise<VoiceServer> {
  objectArg(options, 'createVoiceServer: options');
  // The TTS engine actually run, named (issue 23): espeak-ng wasm, else the system library, else a
  // refusal naming both installs; `tone` only when asked for.
  const tts0 = options.tts === undefined || typeof options.tts === 'string' ? await chooseTtsEngine(options.tts) : options.tts;
  const config = resolveServerConfig({ ...options, tts: tts0 }, { tts: tts0, stt: defaultEngineName('stt') });
  checkServerOptions(options);
  const tts = ttsEngineEntry(config.tts);
  const stt = sttEngineEntry(config.stt);
  if (tts === undefined) throw new VoicewireError('INVALID_ARGUMENT', `unknown TTS engine ${config.tts}; known: ${Object.keys(TTS_ENGINES).join(', ')}`);
  if (stt === undefined) throw new VoicewireError('INVALID_ARGUMENT', `unknown STT engine ${config.stt}; known: ${Object.keys(STT_ENGINES).join(', ')}`);
  // Node's native paths, whoever creates the server (issue 22: `voicewire serve` built every audio
  // line with the JS base64 and encoded Opus in wasm, as nothing had imported voicewire/node).
  registerNativeBase64();
  registerNativeOpus();
  // Read before the store is written to (the catalog seeding below): a bad folder changes nothing.
  const pageDir = options.pageDir === undefined ? defaultPageDir() : options.pageDir;
  let page: ReturnType<typeof createPageHandler>;
  try {
    page = createPageHandler(pageDir);
  } catch (err) {
    throw new VoicewireError('INVALID_ARGUMENT', `createVoiceServer: pageDir ${JSON.stringify(pageDir)} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  // The catalog (the engine's voices and the library's mapped onto them) is derived at every start
  // and served from memory, never stored: no voice outlives its engine (issue 23).
  const catalogCreatedAt = new Date().toISOString();
  // Key lookups kept limits.authCacheSeconds (issue 34); a key revoked through this store leaves it at once.
  const authCache = new AuthCache(config.limits.authCacheSeconds * 1000);
  // Revocations announced by the store (this process; Postgres: every instance, once listening) empty it at once.
  const stopAuthChanges = listenAuthChanges(options.store, (keyId) => authCache.invalidate(keyId));
  const authWatch = options.store as Partial<{ watchAuthChanges(): () => Promise<void> }>;
  let stopAuthWatch: (() => Promise<void>) | undefined;
  // Voice lookups kept VOICE_CACHE_TTL_MS (issue 34); a voice written through this store drops them at once.
  const store = withVoiceCache(
    withCatalogVoices(
      withAuthInvalidation(options.store, authCache),
      withLibraryVoices(catalogVoices(config.tts))
        .map((v) => ({ ...v, orgId: null, createdAt: catalogCreatedAt }))
        // The order the listing had when they were stored with one creation time: by uid.
        .sort((a, b) => a.uid.localeCompare(b.uid)),
    ),
    new VoiceCache(),
  );
  // Never a key or a token in a log line: the only request data logged is the path, ids and counts.
  const log =
    options.logger ??
    pino({ level: 'info', base: { service: 'voicewire' }, redact: { paths: ['req.headers["x-api-key"]', 'token', 'key', 'apiKey'], censor: '[redacted]' } }, options.logDestination);
  const metrics: ServerMetrics = createMetrics({ process: options.processMetrics ?? false });
  const sessions = new SessionTracker(metrics, config.limits.connectionsPerKey);
  const storeHealth = new StoreHealth(options.store, {
    ...options.storeHealth,
    onChange: (up, error) => {
      if (up) log.info('store answers again: ready');
      else log.error({ error }, 'store unavailable: not ready, new sessions refused');
      options.storeHealth?.onChange?.(up, error);
    },
  });

  // Engines with worker threads (sherpa-onnx) size their pools from the limits before any work.
  tts.configure?.(config.limits);
  stt.configure?.(config.limits);
  // A missing model is not fatal: its routes answer ENGINE_UNAVAILABLE naming what to install.
  await tts.warm?.().catch((err: unknown) => log.warn({ engine: config.tts, err: (err as Error)?.message }, 'TTS engine unavailable'));

  // Issue 20: the STT engine is made once and owns its decoders; a heavy one's streams are bounded
  // per process (its budget), per socket (each ctx.sttEngine call) and per API key; issue 31: the
  // last of the budget are kept for organizations holding none, and the decoders' native calls
  // are served caller by caller.
  STT_DECODER_BUDGET.setLimit(config.limits.sttDecoders);
  POCKETSPHINX_CALLS.setConcurrency(config.limits.sttDecodeThreads);
  // Issue 33: with a Silero VAD, every engine's steps carry its horizons (checked before any socket opens).
  const silero = options.vadModel === undefined ? undefined : await startSileroSteps(options.vadModel);
  const sharedStt = silero === undefined ? stt.create() : withSileroSteps(stt.create(), silero);
  const sttPerKey = new KeyedBudget('live STT requests', config.limits.sttDecodersPerKey, 'limits.sttDecodersPerKey');
  const sttPerOrg = new ReservedShares('STT decoders', () => STT_DECODER_BUDGET.limit, config.limits.sttDecoderReserve, 'limits.sttDecoderReserve');
  const sttStreams = (who: Principal): SttEngine => {
    const engine = withTenant(sharedStt, connectionTenant(who));
    if (stt.heavy !== true) return engine;
    const perSocket = new KeyedBudget('live STT requests', config.limits.sttDecodersPerSocket, 'limits.sttDecodersPerSocket');
    return limitSttStreams(engine, [() => perSocket.acquire('', 'this socket'), () => sttPerKey.acquire(who.key.id, 'this API key'), () => sttPerOrg.acquire(who.org.id, 'this organization')]);
  };

  const engineContext = (orgId: string): EngineContext => ({
    resolveVoice: async (id) => (id === null ? undefined : findVoice(store, orgId, id)),
    resolvePronunciation: (id) => store.getDictionary(orgId, id),
  });
  // Issue 36: this process is an instance with open holds; from `listen` on it heartbeats and sweeps dead instances' holds.
  const holds = new OpenHolds(options.store, log, metrics, { heartbeatMs: config.limits.instanceHeartbeatMs, timeoutMs: config.limits.instanceTimeoutMs });
  const ctx: ServerContext = {
    config,
    store,
    log,
    metrics,
    sessions,
    storeHealth,
    holds,
    version: options.version ?? '0.0.0',
    startedAt: Date.now(),
    engineContext,
    // A TTS engine binds the caller's organization (a closure over the shared model); the STT engine is the process's.
    // Each socket or POST is a tenant of the engines' fair queues (organization/key/connection).
    ttsEngine: (who) => meteredTtsEngine(ctx, who, timedTtsEngine(withTenant(tts.create(engineContext(who.org.id)), connectionTenant(who)), config.limits.engineTimeoutSeconds * 1000)),
    sttEngine: (who, billing) => meteredSttEngine(ctx, who, timedSttEngine(sttStreams(who), config.limits.engineTimeoutSeconds * 1000), billing),
    uploads: new UploadBudget(config.limits.uploadBytes, config.limits.uploadBytesPerKey),
    ffmpeg: new FfmpegBudget(config.limits.ffmpegChildren, config.limits.ffmpegChildrenPerKey),
    // `allowToken`: the route takes `?token=` as TTS does (docs/api.md §5.2) — voicewire's extension
    // for the routes its web page calls, since a browser cannot set a WebSocket's headers.
    auth: async (req, o = {}) => {
      // A store known to be down refuses at once rather than after the driver's timeout.
      storeHealth.assertUp();
      return authenticate(store, { headers: req.headers, url: req.url ?? '/', route: o.allowToken ? 'tts' : (o.route ?? 'rest') }, { region: config.region, cache: authCache });
    },
  };

  const modules: RouteModule[] = [probeRoutes, s2sRoutes, ttsRoutes, sttRoutes, accountRoutes, voiceRoutes, voiceDesignRoutes, pronunciationRoutes, openApiRoutes];
  // Without --core-url this process serves the core routes real clients call (§4.13).
  if (config.coreUrl === null) modules.push(usageSummaryRoutes, coreVoiceRoutes, corePronunciationRoutes);
  const router = new Router(modules);
  const forward = config.coreUrl === null ? null : createForwarder(config.coreUrl, config.limits.upstreamTimeoutMs);

  const scopeOf = (req: IncomingMessage, path: string, params: Record<string, string>): RequestScope => {
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://localhost');
    return { ctx, requestId, log: log.child({ request_id: requestId }), url, params };
  };

  const onRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    if (method === 'GET' && url.pathname === '/metrics') {
      let text: string;
      try {
        text = await (options.metricsText ?? (() => metrics.registry.metrics()))();
      } catch (err) {
        // A partial answer would read as the whole: the scrape fails instead.
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`metrics unavailable: ${(err as Error).message}\n`);
        return;
      }
      res.writeHead(200, { 'content-type': metrics.registry.contentType });
      res.end(text);
      return;
    }
    // The OpenAI-compatible routes (README "OpenAI-compatible routes"), in OpenAI's error form.
    if (isOpenAIPath(url.pathname)) return serveOpenAI(scopeOf(req, url.pathname, {}), req, res);
    if (url.pathname !== API && !url.pathname.startsWith(`${API}/`)) {
      if ((method === 'GET' || method === 'HEAD') && page(url.pathname, res)) return;
      return sendJson(res, 404, { detail: 'Not Found' });
    }
    const path = url.pathname.slice(API.length) || '/';
    const m = router.matchHttp(method, path);
    const scope = scopeOf(req, path, m?.params ?? {});
    try {
      if (m !== undefined) {
        await m.route.handle(scope, req, res);
        return;
      }
      // §4.13: anything else is authenticated (bad key → 401) and forwarded, or 404 without a core.
      try {
        await ctx.auth(req);
      } catch (err) {
        const e = toVoicewireError(err);
        if (e.code !== 'PROTOCOL_UNAUTHORIZED') throw e;
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: e.message }));
        return;
      }
      if (forward === null) throw new VoicewireError('NOT_FOUND', 'Not Found');
      await forward(scope, req, res);
    } catch (err) {
      const e = toVoicewireError(err);
      metrics.errors.inc({ code: e.code });
      // The client got only `store unavailable` / `core API unreachable`: the reason is logged here, with the request id.
      const reason = e.code === 'STORE_UNAVAILABLE' ? storeErrorReason(e) : e.code === 'FORWARD_FAILED' && e.cause instanceof Error ? e.cause.message : undefined;
      scope.log.info({ method, path, code: e.code, error: e.message, ...(reason !== undefined ? { reason } : {}) }, 'request failed');
      sendError(res, e);
    }
  };

  /** Logs what reached a last resort; never throws (the error may be anything, even a throwing Proxy). */
  const logLastResort = (err: unknown, msg: string): void => {
    try {
      metrics.errors.inc({ code: 'PROTOCOL_INTERNAL' });
      let error = 'an unprintable value';
      try {
        error = err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 500) : typeof err;
      } catch {
        // keep the placeholder
      }
      log.error({ error }, msg);
    } catch {
      // the answer matters more than the log line
    }
  };

  /**
   * The last resort of a request (issue 20): whatever escaped its route and sendError (a stack
   * overflow, a throw in a logger) is logged and answered 500, or the response is cut when its
   * head is gone. Never throws: nothing a request does may reach the process's handlers.
   */
  const lastResort = (res: ServerResponse, err: unknown): void => {
    logLastResort(err, 'request failed past its handler: 500');
    try {
      if (res.headersSent) res.destroy();
      else {
        const body = formatRestError(1011, 'internal server error');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      }
    } catch {
      res.destroy();
    }
  };

  // node:http checks both timeouts only every connectionsCheckingInterval (default 30 s, so a
  // slowloris peer held a socket up to 30 s past them): check at least every second.
  const limits = config.limits;
  const checkMs = Math.max(50, Math.min(1000, limits.headersTimeoutMs / 4));
  const http: Server = createServer({ headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: checkMs }, (req, res) => {
    requestStarted(req.socket);
    if (!admitForwarded(req, res)) return sendError(res, perAddressError());
    onRequest(req, res).catch((err: unknown) => lastResort(res, err));
  });
  http.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // Past it net.Server closes each new socket at once ('drop'), before any byte is read.
  http.maxConnections = limits.maxConnections;
  // ws's own cap stays above the limit the sessions check, so frames past the limit are read only
  // up to it; either way the session answers with its error first (src/node/ws-session.ts).
  // UTF-8 is checked by the session's parser (an `error` 1008 naming it, §7.3), not by ws (a bare close 1007).
  // autoPong off: the sessions answer pings themselves, within maxPingsPerSecond (src/server/ws.ts).
  // handleProtocols: a browser's OpenAI Realtime credential subprotocol is never echoed back (routes/openai/realtime.ts).
  const wss = new WebSocketServer({ noServer: true, maxPayload: 2 * config.limits.maxFrameBytes + 1024, skipUTF8Validation: true, autoPong: false, handleProtocols: selectRealtimeProtocol });
  /** The last resort of a WebSocket route (issue 20): logged, then `error` 1011 and close, or cut. */
  const wsLastResort = (ws: WebSocket, err: unknown): void => {
    logLastResort(err, 'websocket route failed: 1011');
    try {
      // A route pauses its socket until it is set up; a paused socket would not read the close frame.
      ws.resume();
      failSocket(ws, new VoicewireError('PROTOCOL_INTERNAL', 'internal server error'));
    } catch {
      ws.terminate();
    }
  };
  http.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    requestStarted(socket);
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const path = url.pathname.startsWith(`${API}/`) ? url.pathname.slice(API.length) : null;
      // `/v1/realtime` (OpenAI's door) sits beside `/api`.
      const m = path === null ? matchOpenAIWs(url.pathname) : router.matchWs(path);
      // Draining: refused before the 101, so a balancer retries it elsewhere (docs/operations.md).
      if (sessions.draining) return refuseUpgrade(socket, drainingError());
      if (!admitForwarded(req, socket)) return refuseUpgrade(socket, perAddressError());
      wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
        try {
          const scope = scopeOf(req, path ?? url.pathname, m?.params ?? {});
          if (m === undefined) return failSocket(ws, new VoicewireError('NOT_FOUND', `no WebSocket route ${url.pathname}`, { closeCode: 1008 }));
          ws.on('error', logWsError(scope.log));
          Promise.resolve(m.route.handle(scope, ws, req)).catch((err: unknown) => wsLastResort(ws, err));
        } catch (err) {
          wsLastResort(ws, err);
        }
      });
    } catch (err) {
      logLastResort(err, 'upgrade failed: socket closed');
      socket.destroy();
    }
  });

  // Connections (issue 20). A connection waits at most headersTimeout (+ two checks, so a slow one
  // gets node's 408 first) for its first request: node:http 20 expires a silent one itself, this
  // timer is the bound should it not (issue 20 saw idle sockets held past 150 s). Each address
  // holds at most connectionsPerAddress, the server maxConnections (net.Server's own cap).
  const sockets = new Set<Socket>();
  const perAddress = new PerAddressCount(limits.connectionsPerAddress);
  let refusedLogged = 0;
  const proxies = new TrustedProxies(config.trustedProxies);
  /** Counts one more open connection (or forwarded request) of `address`; false past the limit (logged at most once a second). */
  function takeAddress(address: string): boolean {
    if (perAddress.take(address)) return true;
    metrics.errors.inc({ code: 'LIMIT_EXCEEDED' });
    // At most one line a second: a flood must not become a flood of log lines.
    if (Date.now() - refusedLogged >= 1000) {
      refusedLogged = Date.now();
      log.warn({ limit: limits.connectionsPerAddress }, 'connection refused: too many from one address');
    }
    return false;
  }
  /**
   * A request (or upgrade) a trusted proxy forwards counts against its client's address until
   * `end` closes (the response, or the upgraded socket); false: that address is at its limit.
   * Anyone else's connection was counted when it opened.
   */
  function admitForwarded(req: IncomingMessage, end: { once(event: 'close', f: () => void): unknown }): boolean {
    const peer = req.socket.remoteAddress ?? '';
    if (!proxies.trusts(peer)) return true;
    const client = proxies.clientAddress(peer, req.headers['x-forwarded-for']);
    if (!takeAddress(client)) return false;
    end.once('close', () => perAddress.release(client));
    return true;
  }
  const perAddressError = (): VoicewireError => new VoicewireError('LIMIT_EXCEEDED', `too many open connections from this address (limit ${limits.connectionsPerAddress})`);
  const awaitingRequest = new Map<Socket, NodeJS.Timeout>();
  const firstRequestMs = limits.headersTimeoutMs + 2 * checkMs;
  function requestStarted(s: Socket): void {
    const timer = awaitingRequest.get(s);
    if (timer === undefined) return;
    clearTimeout(timer);
    awaitingRequest.delete(s);
  }
  http.on('connection', (s: Socket) => {
    const address = s.remoteAddress ?? '';
    // A trusted proxy's connection carries many clients: its requests count against theirs (admitForwarded).
    const counted = !proxies.trusts(address);
    if (counted && !takeAddress(address)) {
      s.destroy();
      return;
    }
    sockets.add(s);
    const timer = setTimeout(() => {
      awaitingRequest.delete(s);
      s.destroy();
    }, firstRequestMs);
    timer.unref();
    awaitingRequest.set(s, timer);
    s.once('close', () => {
      sockets.delete(s);
      requestStarted(s);
      if (counted) perAddress.release(address);
    });
  });
  http.on('drop', () => {
    metrics.errors.inc({ code: 'LIMIT_EXCEEDED' });
    if (Date.now() - refusedLogged >= 1000) {
      refusedLogged = Date.now();
      log.warn({ limit: limits.maxConnections }, 'connection refused: maxConnections reached');
    }
  });

  let closed: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      storeHealth.stop();
      // The last settlements may come after (sockets are cut below): one refused then is swept once this instance's heartbeat is old.
      void holds.stop();
      stopAuthChanges();
      void stopAuthWatch?.();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      // The Silero worker stops with the server (its streams were cut with their sockets).
      http.close(() => void Promise.resolve(silero?.close()).then(() => resolve(), () => resolve()));
      for (const s of sockets) s.destroy();
    });
    return closed;
  };

  return {
    config,
    context: ctx,
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve, reject) => {
        if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
          throw new VoicewireError('INVALID_ARGUMENT', `listen: port must be an integer from 0 to 65535, got ${describeValue(port)}`);
        }
        if (typeof host !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `listen: host must be a string, got ${describeValue(host)}`);
        http.once('error', reject);
        http.listen(port, host, () => {
          http.off('error', reject);
          const a = http.address() as AddressInfo;
          storeHealth.start();
          // The first beat and sweep now: what an instance that died before this one started left open is settled.
          holds.start();
          if (typeof authWatch.watchAuthChanges === 'function' && config.limits.authCacheSeconds > 0) stopAuthWatch ??= authWatch.watchAuthChanges();
          resolve({ port: a.port, host });
        });
      }),
    drain: (enable) => {
      if (typeof enable !== 'boolean') throw new VoicewireError('INVALID_ARGUMENT', `drain: enable must be a boolean, got ${describeValue(enable)}`);
      sessions.setDraining(enable);
    },
    async shutdown(graceSeconds = config.limits.drainGraceSeconds) {
      // At most setTimeout's longest delay (24.8 days): a longer grace would end after 1 ms.
      if (typeof graceSeconds !== 'number' || !(graceSeconds >= 0 && graceSeconds * 1000 <= 2 ** 31 - 1)) {
        throw new VoicewireError('INVALID_ARGUMENT', `shutdown: graceSeconds must be a number from 0 to 2147483, got ${describeValue(graceSeconds)}`);
      }
      sessions.setDraining(true);
      log.info({ live_sessions: sessions.live }, 'draining before shutdown');
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceSeconds * 1000)));
      await Promise.race([sessions.whenDrained(), grace]);
      clearTimeout(timer);
      if (sessions.live > 0) log.warn({ live_sessions: sessions.live }, 'grace period over: cutting live sessions');
      await close();
      log.info('closed');
    },
    close,
  };
}
