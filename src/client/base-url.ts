/**
 * Where the service is: a base URL ending with `/api` (docs/api.md "{base_url}"). Like the
 * service's Python client (protocol-notes.md), a base without a scheme that starts with `127` or
 * `localhost` means `http://` (else `https://`), and paths are joined below the base.
 */
import { VoicewireError } from '../util/errors.js';
import { describeValue } from '../util/args.js';

/** The base URL with a trailing `/` and a scheme. */
export function normalizeBaseUrl(baseUrl: string): string {
  if (typeof baseUrl !== 'string' || baseUrl.trim() === '') throw new VoicewireError('INVALID_ARGUMENT', 'createClient: baseUrl must be a non-empty string such as http://127.0.0.1:8080/api');
  let url = baseUrl.trim();
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) url = `${/^(127\.|localhost|\[::1\])/i.test(url) ? 'http' : 'https'}://${url}`;
  try {
    new URL(url);
  } catch {
    throw new VoicewireError('INVALID_ARGUMENT', `createClient: baseUrl is not a URL: ${JSON.stringify(baseUrl)}`);
  }
  return url.endsWith('/') ? url : `${url}/`;
}

/** `path` (no leading `/`) below the base, with a query. */
export function httpUrl(base: string, path: string, query?: Record<string, string | number | boolean | undefined>): string {
  const url = new URL(path, base);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined) continue;
    // Options reach here from callers: a value that is not a string, number or boolean has no query form.
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') throw new VoicewireError('INVALID_ARGUMENT', `query parameter ${k} must be a string, number or boolean, got ${describeValue(v)}`);
    url.searchParams.set(k, String(v));
  }
  return url.toString();
}

/** The WebSocket address of `path`: `http` → `ws`, `https` → `wss`. */
export function wsUrl(base: string, path: string, query?: Record<string, string | undefined>): string {
  return httpUrl(base, path, query).replace(/^http/, 'ws');
}
