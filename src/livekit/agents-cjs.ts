/**
 * LiveKit Agents for the CommonJS build of `voicewire/livekit` (tsup.config.ts puts this file in
 * place of agents.ts): CommonJS has no top-level await, and `require` is synchronous, so a missing
 * optional peer is caught here and becomes `CLIENT_DEPENDENCY_MISSING` all the same.
 */
import { createRequire } from 'node:module';
import { livekitLoadError } from './missing-agents.js';

type Agents = typeof import('@livekit/agents');
type Rtc = typeof import('@livekit/rtc-node');

const requireHere = createRequire(import.meta.url);

function load(): [Agents, Rtc] {
  try {
    return [requireHere('@livekit/agents') as Agents, requireHere('@livekit/rtc-node') as Rtc];
  } catch (cause) {
    throw livekitLoadError(cause);
  }
}

const loaded = load();
/** `@livekit/agents`. */
export const agents: Agents = loaded[0];
/** `@livekit/rtc-node` (AudioFrame). */
export const rtc: Rtc = loaded[1];
