/**
 * Reading a request's credentials as the service does (docs/api.md §5): the API key from the
 * `x-api-key` header on every route and every transport (REST and the WebSocket upgrade); on the
 * TTS routes (POST /post/speech/tts and the /speech/tts WebSocket) a temporary token (§4.6) in the
 * `token` query parameter instead. The key is never read from a request body, so this helper takes
 * none. Checking the key or token is the server's job; this only finds them.
 */
import { objectArg, shown } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

/** Header access: a fetch `Headers` (anything with `get`), or a record such as Node's `IncomingHttpHeaders`. */
export type CredentialHeaders = { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Which kind of route the request is for: `tts` accepts `?token=`; `stt` and `rest` take the header only. */
export type CredentialRoute = 'tts' | 'stt' | 'rest';

/** Options of {@link readCredentials}. */
export interface ReadCredentialsOptions {
  headers: CredentialHeaders;
  /** The request target (`/speech/tts?token=…`, as Node's `req.url`), a full URL, or a `URL`. Default: no query. */
  url?: string | URL;
  route: CredentialRoute;
}

/** What {@link readCredentials} found; at least one is set. */
export interface Credentials {
  /** The `x-api-key` header's value. */
  apiKey?: string;
  /** The `token` query parameter's value (TTS routes only). */
  token?: string;
}

function header(headers: CredentialHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const v = (headers as { get(name: string): string | null }).get(name);
    return v === null ? undefined : v;
  }
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  let v = Object.prototype.hasOwnProperty.call(record, name) ? record[name] : undefined;
  if (v === undefined) {
    // Header names are case-insensitive (RFC 9110 §5.1); Node lower-cases them, other records may not.
    for (const key of Object.keys(record)) if (key.toLowerCase() === name) v = record[key];
  }
  if (Array.isArray(v)) return v[0] as string | undefined;
  return v as string | undefined;
}

function queryToken(url: string | URL | undefined): string | undefined {
  if (url === undefined) return undefined;
  const text = typeof url === 'string' ? url : url.href;
  const q = text.indexOf('?');
  if (q < 0) return undefined;
  const hash = text.indexOf('#', q);
  const v = new URLSearchParams(text.slice(q + 1, hash < 0 ? undefined : hash)).get('token');
  return v === null ? undefined : v;
}

/**
 * Where a temporary token is accepted, as a refusal says it: §5.2's TTS routes, and what
 * voicewire's web page needs besides (docs/server.md "Credentials": the STT WebSocket, the voice
 * list). The routes ask for route `tts` where they take a token.
 */
const TOKEN_REACH = 'a token query parameter is accepted only where a browser page needs it: TTS (POST and WebSocket), the STT WebSocket and GET /voices/';

/**
 * Finds the credentials of a request (§5): `x-api-key` header everywhere; `?token=` on TTS routes
 * only (§4.5, §4.6). Empty values count as missing. When both are present both are returned (the
 * header is the key; the server decides which to check first).
 *
 * @example
 * // ws upgrade (Node): reject before any setup
 * try { readCredentials({ headers: req.headers, url: req.url, route: 'tts' }); }
 * catch (err) { session.fail(err as VoicewireError); }   // error 1008, close 1008
 * // REST: restErrorResponse(err) → 500 "error from server 1008: …" (§5.6, §7.1)
 *
 * @throws VoicewireError `PROTOCOL_UNAUTHORIZED` (close code 1008) when neither is there (a token
 *   on a route other than TTS does not count).
 */
export function readCredentials(options: ReadCredentialsOptions): Credentials {
  const { headers, url, route } = objectArg(options, 'readCredentials: options');
  if (route !== 'tts' && route !== 'stt' && route !== 'rest') {
    throw new VoicewireError('INVALID_ARGUMENT', `readCredentials: route must be 'tts', 'stt' or 'rest', got ${shown(route)}`);
  }
  const found: Credentials = {};
  const key = header(headers, 'x-api-key');
  if (key !== undefined && key.trim() !== '') found.apiKey = key.trim();
  const token = queryToken(url);
  if (route === 'tts' && token !== undefined && token !== '') found.token = token;
  if (found.apiKey === undefined && found.token === undefined) {
    const hint =
      route === 'tts'
        ? 'send the x-api-key header or the token query parameter'
        : token !== undefined && token !== ''
          ? `send the x-api-key header (${TOKEN_REACH})`
          : 'send the x-api-key header';
    throw new VoicewireError('PROTOCOL_UNAUTHORIZED', `missing API key: ${hint}`);
  }
  return found;
}
