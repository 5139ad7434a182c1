/**
 * The SDK reads a failed REST answer in the service's §7.1 forms and keeps its code: the upstream
 * `error from server <code>: <reason>` and the proxy-level raw string become the VoicewireError
 * they name (issue 21: a bad key was `HTTP 500: invalid API key [HTTP_ERROR]`, code lost).
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';

function answering(status: number, body: string) {
  const fetch = async (): Promise<Response> => new Response(body, { status, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  return createClient({ baseUrl: 'http://127.0.0.1:9/api', apiKey: 'vw_x', fetch, retry: { attempts: 1 } });
}

describe('§7.1 REST errors in the SDK', () => {
  it('error from server 1008: invalid API key → PROTOCOL_UNAUTHORIZED with the numeric code', async () => {
    const err = await answering(500, 'error from server 1008: invalid API key').credits().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'PROTOCOL_UNAUTHORIZED', closeCode: 1008, details: { status: 500, code: 1008, message: 'invalid API key' } });
    expect((err as Error).message).toBe('invalid API key (error from server 1008)');
  });

  it('other upstream reasons keep their meaning; an unknown one keeps the code as PROTOCOL_SERVER_ERROR', async () => {
    const cases: Array<[string, string, number | undefined]> = [
      ['error from server 1008: not enough credits: 3 left, 10 needed', 'CREDITS_EXHAUSTED', 1008],
      ['error from server 1011: engine crashed', 'PROTOCOL_INTERNAL', 1011],
      ['error from server 1008: something new', 'PROTOCOL_SERVER_ERROR', 1008],
      ['invalid voice ID "x"', 'VOICE_NOT_FOUND', undefined],
      ['unsupported content type audio/mpeg', 'PROTOCOL_UNSUPPORTED_CONTENT_TYPE', undefined],
      ['STT: audio could not be decoded: bad header', 'PROTOCOL_INVALID_AUDIO', undefined],
    ];
    for (const [body, code, closeCode] of cases) {
      const err = await answering(500, body).credits().catch((e: unknown) => e);
      expect(err, body).toMatchObject({ code, details: { status: 500 } });
      if (closeCode !== undefined) expect((err as { closeCode?: number }).closeCode, body).toBe(closeCode);
    }
  });

  it('422, 404 and 503 stay HTTP_ERROR with their status (the retry and validation paths read them)', async () => {
    for (const status of [404, 422, 503]) {
      const err = await answering(status, '{"detail":"Not Found"}').credits().catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'HTTP_ERROR', details: { status } });
    }
  });
});
