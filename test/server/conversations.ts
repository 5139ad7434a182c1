/**
 * Recorded conversations with the server (fixtures/server/*.jsonl), one per route, replayed
 * against a running server by conversations.test.ts. Record again (after a deliberate change of
 * the wire) with `npx tsx test/server/conversations.ts`.
 *
 * A file holds one conversation. Lines:
 *   {"meta": {route, description}}
 *   WebSocket routes: {"in": <client message>} sent in order (pipelined), then {"out": <server message>}
 *     in the order the server sent them, then {"close": code}
 *   POST routes: {"request": {path, contentType, body (JSON) | bodyBase64}} then {"response": {status, contentType, lines}}
 * `request_id` values are recorded as "$id" (they are random).
 */
import { readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { connect, startServer, type Harness } from './harness.js';

export const FIXTURES = new URL('../../fixtures/server/', import.meta.url);

export interface Conversation {
  /** `closeAfterEos`: the client closes the socket once it saw that many `end_of_stream` (multiplexed sockets stay open). */
  meta: { route: string; description: string; closeAfterEos?: number };
  in?: Array<Record<string, unknown>>;
  out?: Array<Record<string, unknown>>;
  close?: number;
  request?: { path: string; contentType: string; body?: unknown; bodyBase64?: string };
  response?: { status: number; contentType: string | null; lines: unknown[] };
}

const anonymize = (m: Record<string, unknown>): Record<string, unknown> => ('request_id' in m ? { ...m, request_id: '$id' } : m);

/** Runs a conversation's client side against `h` and returns what the server answered (same shape). */
export async function play(h: Harness, c: Conversation): Promise<Conversation> {
  if (c.in) {
    const ws = connect(`${h.wsBase}${c.meta.route}`, { 'x-api-key': h.apiKey });
    for (const m of c.in) ws.send(m);
    const n = c.meta.closeAfterEos;
    if (n !== undefined) {
      let seen = 0;
      ws.ws.on('message', (d) => {
        if ((JSON.parse(String(d)) as { type: string }).type === 'end_of_stream' && ++seen === n) ws.ws.close(1000);
      });
    }
    const { code } = await ws.closed;
    return { meta: c.meta, in: c.in, out: ws.messages.map(anonymize), close: code };
  }
  const req = c.request!;
  const body = req.bodyBase64 !== undefined ? new Uint8Array(Buffer.from(req.bodyBase64, 'base64')) : JSON.stringify(req.body);
  const r = await fetch(`${h.base}${req.path}`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': req.contentType }, body });
  const text = await r.text();
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as unknown);
  return { meta: c.meta, request: req, response: { status: r.status, contentType: r.headers.get('content-type'), lines } };
}

export function toLines(c: Conversation): string {
  const out: unknown[] = [{ meta: c.meta }];
  for (const m of c.in ?? []) out.push({ in: m });
  for (const m of c.out ?? []) out.push({ out: m });
  if (c.close !== undefined) out.push({ close: c.close });
  if (c.request) out.push({ request: c.request });
  if (c.response) out.push({ response: c.response });
  return out.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

export function readConversation(name: string): Conversation {
  const c: Conversation = { meta: { route: '', description: '' } };
  for (const line of readFileSync(new URL(name, FIXTURES), 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const l = JSON.parse(line) as Record<string, unknown>;
    if ('meta' in l) c.meta = l['meta'] as Conversation['meta'];
    else if ('in' in l) (c.in ??= []).push(l['in'] as Record<string, unknown>);
    else if ('out' in l) (c.out ??= []).push(l['out'] as Record<string, unknown>);
    else if ('close' in l) c.close = l['close'] as number;
    else if ('request' in l) c.request = l['request'] as NonNullable<Conversation['request']>;
    else if ('response' in l) c.response = l['response'] as NonNullable<Conversation['response']>;
  }
  return c;
}

export function conversationNames(): string[] {
  return readdirSync(FIXTURES).filter((f) => f.endsWith('.jsonl')).sort();
}

/** The client sides of the recorded conversations. */
async function scripts(h: Harness): Promise<Record<string, Conversation>> {
  const speech = Buffer.from(await (await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'ok go', output_format: 'ulaw_8000', only_audio: true }) })).arrayBuffer());
  const wav = Buffer.from(await (await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'hi', output_format: 'wav', only_audio: true }) })).arrayBuffer());
  return {
    'tts-ws.jsonl': {
      meta: { route: '/speech/tts', description: 'TTS WebSocket, pipelined like the Python client: setup, two text pieces with a <flush> and a <break>, end_of_stream; μ-law 8 kHz output' },
      in: [
        { type: 'setup', model_name: 'default', voice_id: 'tone-en', output_format: 'ulaw_8000', json_config: '{"padding_bonus": -1}' },
        { type: 'text', text: 'hello <flush>' },
        { type: 'text', text: 'big <break time="0.2s" /> world' },
        { type: 'end_of_stream' },
      ],
    },
    'tts-ws-multiplexed.jsonl': {
      meta: { route: '/speech/tts', description: 'TTS WebSocket, two multiplexed requests (close_ws_on_eos false); the client closes after both end', closeAfterEos: 2 },
      in: [
        { type: 'setup', output_format: 'alaw_8000', close_ws_on_eos: false, client_req_id: 'a' },
        { type: 'setup', output_format: 'alaw_8000', close_ws_on_eos: false, client_req_id: 'b' },
        { type: 'text', text: 'one', client_req_id: 'a' },
        { type: 'text', text: 'two', client_req_id: 'b' },
        { type: 'end_of_stream', client_req_id: 'a' },
        { type: 'end_of_stream', client_req_id: 'b' },
      ],
    },
    'stt-ws.jsonl': {
      meta: { route: '/speech/asr', description: 'STT WebSocket: μ-law 8 kHz tones of "ok go" in 640-byte chunks, a flush, end_of_stream' },
      in: [
        { type: 'setup', model_name: 'default', input_format: 'ulaw_8000', json_config: { language: 'en' } },
        ...Array.from({ length: Math.ceil(speech.length / 640) }, (_, i) => ({ type: 'audio', audio: speech.subarray(i * 640, (i + 1) * 640).toString('base64') })),
        { type: 'flush', flush_id: 1 },
        { type: 'end_of_stream' },
      ],
    },
    's2s-ws.jsonl': {
      meta: { route: '/speech/s2s', description: 'speech-to-speech: μ-law 8 kHz tones of "ok go" in, the words heard as text and re-spoken as A-law 8 kHz audio' },
      in: [
        { type: 'setup', model_name: 'default', input_format: 'ulaw_8000', output_format: 'alaw_8000', voice_id: 'tone-en' },
        ...Array.from({ length: Math.ceil(speech.length / 640) }, (_, i) => ({ type: 'audio', audio: speech.subarray(i * 640, (i + 1) * 640).toString('base64') })),
        { type: 'end_of_stream' },
      ],
    },
    'tts-post.jsonl': {
      meta: { route: '/post/speech/tts', description: 'POST TTS with only_audio false: NDJSON audio and word timestamps' },
      request: { path: '/post/speech/tts', contentType: 'application/json', body: { text: 'hi there', output_format: 'alaw_8000' } },
    },
    'stt-post.jsonl': {
      meta: { route: '/post/speech/asr', description: 'POST STT of a tone WAV ("hi"), Content-Type audio/wav' },
      request: { path: '/post/speech/asr', contentType: 'audio/wav', bodyBase64: wav.toString('base64') },
    },
  };
}

if (process.argv[1]?.endsWith('conversations.ts')) {
  const h = await startServer();
  for (const [name, c] of Object.entries(await scripts(h))) writeFileSync(new URL(name, FIXTURES), toLines(await play(h, c)));
  await h.close();
  console.log('recorded', conversationNames().join(' '));
}
