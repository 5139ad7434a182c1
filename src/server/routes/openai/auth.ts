/**
 * Authentication of the `/v1` routes: OpenAI's SDKs send the key as `Authorization: Bearer <key>`;
 * voicewire's `x-api-key` works too. The key is the same API key as on `/api` (same store, same
 * organization, credits and limits): the bearer value is handed to the server's own check as
 * `x-api-key`, so nothing about keys is decided twice.
 */
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../../auth.js';
import type { ServerContext } from '../../context.js';

/** The key of an `Authorization: Bearer …` header, or undefined. */
export function bearerKey(header: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * Authenticates a `/v1` request with the server's check ({@link ServerContext.auth}).
 * @throws VoicewireError `PROTOCOL_UNAUTHORIZED` (401), `RESIDENCY_DENIED` (403), `STORE_UNAVAILABLE` (503).
 */
export function openAIAuth(ctx: ServerContext, req: IncomingMessage): Promise<Principal> {
  const key = bearerKey(req.headers.authorization);
  if (key === undefined) return ctx.auth(req);
  // The request as the check sees it: the same request, with the bearer key as its x-api-key.
  const view = Object.create(req, { headers: { value: { ...req.headers, 'x-api-key': key }, enumerable: true } }) as IncomingMessage;
  return ctx.auth(view);
}
