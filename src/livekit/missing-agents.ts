/**
 * The error `voicewire/livekit` throws when it cannot load LiveKit Agents: `@livekit/agents` (and
 * its peer `@livekit/rtc-node`) are optional peer dependencies of voicewire, installed by the
 * application that builds an agent, not by every user of the package.
 */
import { VoicewireError } from '../util/errors.js';

/** The packages an application installs to use `voicewire/livekit`. */
export const LIVEKIT_PACKAGES = '@livekit/agents @livekit/rtc-node';

function isNotFound(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

/** `CLIENT_DEPENDENCY_MISSING` naming what to install, or (another load failure) what failed. */
export function livekitLoadError(cause: unknown): VoicewireError {
  const why = (cause as Error | null)?.message ?? String(cause);
  const message = isNotFound(cause)
    ? `voicewire/livekit needs the optional peer dependency @livekit/agents, which is not installed: npm install ${LIVEKIT_PACKAGES} (${why})`
    : `voicewire/livekit could not load @livekit/agents: ${why}`;
  return new VoicewireError('CLIENT_DEPENDENCY_MISSING', message, { cause });
}
