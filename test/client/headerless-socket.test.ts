/**
 * `voicewire/client` with an API key over a WebSocket that cannot send headers (the WHATWG one of
 * browsers and Node ≥ 22, issue 36): the client trades the key for a temporary token over HTTP
 * (`GET /api-keys/token`, §4.6) and connects with `?token=`; one token serves its sockets while it
 * lasts; a key the server refuses fails the request with the server's code; a socket closed while
 * its token is on the way never opens. Here the headerless socket is `ws` with its headers
 * dropped, marked `sendsHeaders: false` as the platform's is (test/product/client-node-lines.test.ts
 * runs the real one under Node 22/26).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createClient } from '../../src/client/index.js';
import type { WebSocketFactory, WebSocketLike } from '../../src/client/index.js';
import { startServer, type Harness } from '../server/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A WebSocket factory that, like a WHATWG WebSocket, sends no headers; it records the addresses it opened. */
function headerless(opened: string[]): WebSocketFactory {
  return Object.assign(
    (url: string) => {
      opened.push(url);
      return new WebSocket(url) as unknown as WebSocketLike;
    },
    { sendsHeaders: false },
  );
}

/** `fetch` that counts the temporary tokens asked for. */
function counting(): { fetch: typeof fetch; tokens: () => number } {
  let n = 0;
  return {
    fetch: ((url: string | URL | Request, init?: RequestInit) => {
      if (String(url).includes('/api-keys/token')) n++;
      return fetch(url, init);
    }) as typeof fetch,
    tokens: () => n,
  };
}

describe('voicewire/client with an API key over a WebSocket without headers', () => {
  it('trades the key for a temporary token: TTS and STT sockets work, one token for both', async () => {
    h = await startServer();
    const opened: string[] = [];
    const f = counting();
    const client = createClient({ baseUrl: h.base, apiKey: h.apiKey, webSocket: headerless(opened), fetch: f.fetch, retry: { attempts: 1 } });
    const spoken = await client.tts({ text: 'hello there', outputFormat: 'wav' });
    expect(spoken.audio.length).toBeGreaterThan(1000);
    const heard = await client.stt(spoken.audio, { inputFormat: 'wav' });
    expect(heard.words.length).toBeGreaterThan(0);
    expect(opened).toHaveLength(2);
    for (const u of opened) expect(u).toMatch(/[?&]token=vwt_/);
    // The key itself never travels in an address.
    for (const u of opened) expect(u).not.toContain(h.apiKey);
    expect(f.tokens()).toBe(1);
    client.close();
  });

  it('asks again for a token that expires within a minute (here the server gives 2 s)', async () => {
    h = await startServer({ tokenSeconds: 2 });
    const f = counting();
    const client = createClient({ baseUrl: h.base, apiKey: h.apiKey, webSocket: headerless([]), fetch: f.fetch, retry: { attempts: 1 } });
    await client.tts({ text: 'one', outputFormat: 'pcm' });
    await client.tts({ text: 'two', outputFormat: 'pcm' });
    expect(f.tokens()).toBe(2);
  });

  it('a key the server refuses: the request fails with the server code (PROTOCOL_UNAUTHORIZED), no socket opened', async () => {
    h = await startServer();
    const opened: string[] = [];
    const client = createClient({ baseUrl: h.base, apiKey: 'vw_not-a-key', webSocket: headerless(opened), retry: { attempts: 1 } });
    await expect(client.tts({ text: 'hello', outputFormat: 'pcm' })).rejects.toMatchObject({ code: 'PROTOCOL_UNAUTHORIZED' });
    const stream = client.sttStream({ inputFormat: 'pcm' });
    stream.write(new Uint8Array(3840));
    await expect((async () => {
      for await (const _ of stream) {
        // nothing comes
      }
    })()).rejects.toMatchObject({ code: 'PROTOCOL_UNAUTHORIZED' });
    expect(opened).toEqual([]);
  });

  it('aborted while its token is on the way: rejects with the abort, and no socket is opened', async () => {
    h = await startServer();
    const opened: string[] = [];
    const client = createClient({ baseUrl: h.base, apiKey: h.apiKey, webSocket: headerless(opened), retry: { attempts: 1 } });
    const ac = new AbortController();
    const p = client.tts({ text: 'hello', outputFormat: 'pcm', signal: ac.signal });
    ac.abort();
    await expect(p).rejects.toMatchObject({ code: 'CLIENT_ABORTED' });
    await new Promise((r) => setTimeout(r, 300));
    expect(opened).toEqual([]);
  });
});
