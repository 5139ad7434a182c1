/**
 * Trusted proxies (issue 36): the per-address connection limit counts the client's address that a
 * named load balancer forwards in `X-Forwarded-For`, and ignores that header from anyone else.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TrustedProxies, parseProxyEntry } from '../../src/server/client-address.js';
import { resolveServerConfig } from '../../src/server/config.js';
import { connect, startServer, type Harness, type WsConversation } from './harness.js';
import { upgradeAnswer } from '../helpers/upgrade-answer.js';

let h: Harness | undefined;
let open: WsConversation[] = [];
afterEach(async () => {
  for (const c of open) c.ws.terminate();
  open = [];
  await h?.close();
  h = undefined;
});

/** Opens a TTS WebSocket that says it comes for `forwardedFor`, and waits for the 101. */
async function session(h: Harness, forwardedFor: string): Promise<WsConversation> {
  const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey, 'x-forwarded-for': forwardedFor });
  open.push(c);
  await c.opened;
  return c;
}

describe('TrustedProxies', () => {
  const p = new TrustedProxies(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);

  it('trusts the addresses and blocks named, IPv4 as a dual-stack socket reports it too', () => {
    expect([p.trusts('10.1.2.3'), p.trusts('127.0.0.1'), p.trusts('::ffff:127.0.0.1'), p.trusts('fd00::5'), p.trusts('127.0.0.2'), p.trusts('11.0.0.1'), p.trusts('::1'), p.trusts('')]).toEqual([
      true, true, true, true, false, false, false, false,
    ]);
  });

  it('reads X-Forwarded-For from the right, up to the first address that is not a trusted proxy', () => {
    expect(p.clientAddress('127.0.0.1', '203.0.113.7')).toBe('203.0.113.7');
    // The client wrote the left part itself: only what trusted hops appended counts.
    expect(p.clientAddress('127.0.0.1', '198.51.100.1, 203.0.113.7, 10.0.0.9')).toBe('203.0.113.7');
    expect(p.clientAddress('127.0.0.1', ['198.51.100.1', '203.0.113.7'])).toBe('203.0.113.7');
    expect(p.clientAddress('::ffff:127.0.0.1', '::ffff:203.0.113.7')).toBe('203.0.113.7');
    // All trusted: the leftmost; none: the proxy; garbage ends the walk at the last good address.
    expect(p.clientAddress('127.0.0.1', '10.0.0.1, 10.0.0.2')).toBe('10.0.0.1');
    expect(p.clientAddress('127.0.0.1', undefined)).toBe('127.0.0.1');
    expect(p.clientAddress('127.0.0.1', 'not-an-address')).toBe('127.0.0.1');
    expect(p.clientAddress('127.0.0.1', '203.0.113.7, junk, 10.0.0.9')).toBe('10.0.0.9');
  });

  it('never reads the header on a connection from anyone else', () => {
    expect(p.clientAddress('198.51.100.1', '203.0.113.7')).toBe('198.51.100.1');
    expect(new TrustedProxies([]).clientAddress('127.0.0.1', '203.0.113.7')).toBe('127.0.0.1');
  });

  it('refuses an entry that is not an address or a CIDR block, in the config too', () => {
    expect(parseProxyEntry('10.0.0.0/8')).toEqual(['10.0.0.0', 8]);
    expect(parseProxyEntry('::1')).toEqual(['::1', 128]);
    for (const bad of ['10.0.0.0/33', 'fd00::/129', 'localhost', '10.0.0.1/8/1', '10.0.0.0/', '']) {
      expect(() => parseProxyEntry(bad), bad).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(() => resolveServerConfig({ trustedProxies: ['10.0.0.0/8', 'proxy.local'] }, { tts: 'tone', stt: 'tone' })).toThrow(/trusted proxy "proxy.local"/);
    expect(() => resolveServerConfig({ trustedProxies: '10.0.0.1' as unknown as string[] }, { tts: 'tone', stt: 'tone' })).toThrow(/trustedProxies must be an array/);
    expect(resolveServerConfig({}, { tts: 'tone', stt: 'tone' }).trustedProxies).toEqual([]);
  });
});

describe('connectionsPerAddress behind a trusted proxy', () => {
  it("counts the forwarded client's sessions, not the proxy's connections", async () => {
    h = await startServer({ trustedProxies: ['127.0.0.1'], limits: { connectionsPerAddress: 2 } });
    // Five connections from the proxy's own address: it is not limited as one client.
    await Promise.all([session(h, '203.0.113.7'), session(h, '203.0.113.7'), session(h, '203.0.113.8'), session(h, '203.0.113.9'), session(h, '198.51.100.1, 203.0.113.9')]);
    // A third of 203.0.113.7 is refused before the 101, however the client spoofs the left of the header.
    for (const xff of ['203.0.113.7', '198.51.100.1, 203.0.113.7', '203.0.113.9']) {
      const refused = await upgradeAnswer(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey, 'x-forwarded-for': xff });
      expect(refused, xff).toEqual({ status: 500, body: 'error from server 1008: too many open connections from this address (limit 2)' });
    }
    const post = await fetch(`${h.base}/voices`, { headers: { 'x-api-key': h.apiKey, 'x-forwarded-for': '203.0.113.7' } });
    expect(post.status).toBe(500);
    // Another client goes through; and a closed session frees its place.
    expect((await fetch(`${h.base}/voices`, { headers: { 'x-api-key': h.apiKey, 'x-forwarded-for': '203.0.113.10' } })).status).toBe(200);
    const first = open[0]!;
    first.ws.close();
    await first.closed;
    await expect.poll(async () => (await fetch(`${h!.base}/voices`, { headers: { 'x-api-key': h!.apiKey, 'x-forwarded-for': '203.0.113.7' } })).status).toBe(200);
  });

  it('ignores a spoofed X-Forwarded-For from an address that is not a trusted proxy', async () => {
    h = await startServer({ trustedProxies: ['10.0.0.0/8'], limits: { connectionsPerAddress: 2 } });
    await Promise.all([session(h, '203.0.113.1'), session(h, '203.0.113.2')]);
    // Two connections from 127.0.0.1 are its limit, whatever addresses their headers claim.
    await expect(upgradeAnswer(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey, 'x-forwarded-for': '203.0.113.3' })).rejects.toThrow();
    await expect(fetch(`${h.base}/voices`, { headers: { 'x-api-key': h.apiKey, 'x-forwarded-for': '203.0.113.4' } })).rejects.toThrow();
  });
});
