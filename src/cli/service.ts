/**
 * What the client commands (`tts`, `stt`, `voices`, `credits`) share: the service's address and
 * key from `--base-url` / `--api-key` (or VOICEWIRE_BASE_URL / VOICEWIRE_API_KEY), and flag parsing
 * with Node's own `util.parseArgs`.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { VoicewireError } from '../util/errors.js';
import { createClient } from '../node/client.js';
import type { VoiceClient } from '../client/index.js';

/** Default service address: `voicewire serve` on this machine. */
export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080/api';

const COMMON = {
  'base-url': { type: 'string' },
  'api-key': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** Parses `argv` with the common flags plus `options`; unknown flags are a CLI_USAGE error. */
export function parseCommand<O extends NonNullable<ParseArgsConfig['options']>>(command: string, argv: readonly string[], options: O) {
  try {
    return parseArgs({ args: [...argv], options: { ...COMMON, ...options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new VoicewireError('CLI_USAGE', `${command}: ${(err as Error).message} (see voicewire --help)`);
  }
}

/** The client for the parsed flags. */
export function clientFor(values: { 'base-url'?: string | boolean | undefined; 'api-key'?: string | boolean | undefined }): VoiceClient {
  const apiKey = (values['api-key'] as string | undefined) ?? process.env['VOICEWIRE_API_KEY'];
  if (apiKey === undefined || apiKey === '') {
    throw new VoicewireError('CLI_USAGE', 'no API key: pass --api-key or set VOICEWIRE_API_KEY (voicewire serve prints one on its first start; voicewire keys create makes more)');
  }
  const baseUrl = (values['base-url'] as string | undefined) ?? process.env['VOICEWIRE_BASE_URL'] ?? DEFAULT_BASE_URL;
  return createClient({ baseUrl, apiKey });
}

/** A progress line on stderr, only when stderr is a terminal. */
export function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
}

/** Ends the progress line. */
export function progressDone(): void {
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
}
