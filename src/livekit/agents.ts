/**
 * LiveKit Agents, loaded once for `voicewire/livekit` (ESM build). A dynamic import, so that a
 * missing optional peer becomes `CLIENT_DEPENDENCY_MISSING` naming the package to install instead
 * of the loader's bare "Cannot find package". It is the application's own copy (the `import`
 * condition), so the plugin's classes extend the very `tts.TTS` and `stt.STT` its agent uses.
 * The CommonJS build swaps this file for agents-cjs.ts (tsup.config.ts), which `require`s.
 */
import { livekitLoadError } from './missing-agents.js';

type Agents = typeof import('@livekit/agents');
type Rtc = typeof import('@livekit/rtc-node');

const loaded = await Promise.all([import('@livekit/agents'), import('@livekit/rtc-node')]).catch((cause: unknown) => {
  throw livekitLoadError(cause);
});

/** `@livekit/agents`. */
export const agents: Agents = loaded[0];
/** `@livekit/rtc-node` (AudioFrame). */
export const rtc: Rtc = loaded[1];
