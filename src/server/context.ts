/**
 * What every route module is given: the configuration, the store, the logger, metrics, the session
 * tracker and the engines (bound per organization, metered per caller).
 */
import type { Logger } from 'pino';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import type { SttEngine } from '../sessions/engine.js';
import type { EngineContext } from '../engines/registry.js';
import type { ServerConfig } from './config.js';
import type { ServerMetrics } from './metrics.js';
import type { SessionTracker } from './sessions.js';
import type { Store } from './store/store.js';
import type { Principal } from './auth.js';
import type { StoreHealth } from './store-health.js';
import type { MeteredTtsEngine, SttBillOptions } from './credits.js';
import type { UploadBudget } from './upload-budget.js';
import type { FfmpegBudget } from './ffmpeg-budget.js';
import type { OpenHolds } from './open-holds.js';

export interface ServerContext {
  readonly config: ServerConfig;
  readonly store: Store;
  readonly log: Logger;
  readonly metrics: ServerMetrics;
  readonly sessions: SessionTracker;
  /** Periodic store pings: /readyz is 503 and new sessions are refused while the store is down. */
  readonly storeHealth: StoreHealth;
  /** This instance's open credit holds, its heartbeat and the sweep of dead instances' holds (open-holds.ts). */
  readonly holds: OpenHolds;
  readonly version: string;
  readonly startedAt: number;
  /** The engine context of an organization (voices and dictionaries it may use). */
  engineContext(orgId: string): EngineContext;
  /** A metered TTS engine for one caller (one per POST or WebSocket: the route reports what was sent). */
  ttsEngine(who: Principal): MeteredTtsEngine;
  /** A metered STT engine for one caller (`options`: when its bills are paid, credits.ts). */
  sttEngine(who: Principal, options?: SttBillOptions): SttEngine;
  /** Upload bytes held in memory, per process and per key (`limits.uploadBytes`, `uploadBytesPerKey`). */
  readonly uploads: UploadBudget;
  /** Live ffmpeg children, per process and per key (`limits.ffmpegChildren`, `ffmpegChildrenPerKey`). */
  readonly ffmpeg: FfmpegBudget;
  /**
   * Authenticates a request for an organization's route (x-api-key; a temporary token too when
   * `route` is `tts` or `allowToken` is set: only where a browser page speaks and listens, auth.ts).
   * Instance administration is `authenticateInstanceAdmin` (auth.ts), not this.
   */
  auth(req: IncomingMessage, options?: { route?: 'tts' | 'stt' | 'rest'; allowToken?: boolean }): Promise<Principal>;
}

/** One request's view: the context, its request id and logger, the parsed URL and path parameters. */
export interface RequestScope {
  ctx: ServerContext;
  requestId: string;
  log: Logger;
  url: URL;
  params: Record<string, string>;
}

/** An HTTP route of a route module. `path` is relative to `/api`, `:name` segments are parameters. */
export interface HttpRoute {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  handle(scope: RequestScope, req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/** A WebSocket route: the socket is already upgraded (errors go out as `error` messages, §7.3). */
export interface WsRoute {
  path: string;
  handle(scope: RequestScope, ws: WebSocket, req: IncomingMessage): Promise<void> | void;
}

/** A route module: one file per route group. */
export interface RouteModule {
  http?: HttpRoute[];
  ws?: WsRoute[];
}
