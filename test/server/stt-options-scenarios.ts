/**
 * Issue 35's STT scenarios, written once for any running server (the in-process harness and the
 * built one): the STT `json_config` keys the service's Python client documents, with the shapes it
 * sends (protocol-notes.md: `json_config` as a JSON string, pipelined messages), and what a client
 * pays for them. The server must run the tone engines (`--stt tone --tts tone`).
 */
import { WebSocket } from 'ws';

/** Where the server is and the key to use. */
export interface SttTarget {
  base: string;
  wsBase: string;
  key: string;
}

export type Message = Record<string, unknown>;

/** One STT WebSocket request, pipelined as the Python client sends it; every message until the socket closes. */
export function sttSession(t: SttTarget, messages: unknown[], timeoutMs = 60_000): Promise<Message[]> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.wsBase}/speech/asr`, { headers: { 'x-api-key': t.key } });
    const got: Message[] = [];
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`STT session still open after ${timeoutMs} ms: ${JSON.stringify(got.slice(-3))}`));
    }, timeoutMs);
    ws.on('open', () => {
      for (const m of messages) ws.send(JSON.stringify(m));
    });
    ws.on('message', (d) => got.push(JSON.parse(String(d)) as Message));
    ws.on('error', (e) => (clearTimeout(timer), reject(e)));
    ws.on('close', () => (clearTimeout(timer), resolve(got)));
  });
}

/** `setup` with a `json_config` sent as the Python client sends it: a JSON string. */
export const setup = (jsonConfig?: Record<string, unknown>): Message => ({
  type: 'setup',
  model_name: 'default',
  input_format: 'pcm',
  ...(jsonConfig === undefined ? {} : { json_config: JSON.stringify(jsonConfig) }),
});

/** `audio` messages for `pcm` bytes (24 kHz s16le), in 80 ms chunks. */
export function audioMessages(pcm: Uint8Array): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < pcm.length; i += 3840) out.push({ type: 'audio', audio: Buffer.from(pcm.subarray(i, i + 3840)).toString('base64') });
  return out;
}

/** Silence, `seconds` of 24 kHz s16le. */
export const silence = (seconds: number): Uint8Array => new Uint8Array(Math.round(seconds * 24000) * 2);

/** The tone engine saying `text`, as 24 kHz s16le PCM (POST /post/speech/tts, `pcm_24000`). */
export async function spoken(t: SttTarget, text: string): Promise<Uint8Array> {
  const r = await fetch(`${t.base}/post/speech/tts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': t.key },
    body: JSON.stringify({ text, output_format: 'pcm_24000', only_audio: true }),
  });
  if (r.status !== 200) throw new Error(`TTS answered ${r.status}: ${await r.text()}`);
  return new Uint8Array(await r.arrayBuffer());
}

/** The organization's remaining credits (GET /usages/credits). */
export async function remaining(t: SttTarget): Promise<number> {
  const r = await fetch(`${t.base}/usages/credits`, { headers: { 'x-api-key': t.key } });
  return ((await r.json()) as { remaining_credits: number }).remaining_credits;
}

/**
 * What a request cost: runs `request`, then waits (up to `ms`) for its bill to settle. A hold takes
 * more than the charge and settling gives the rest back, so the balance rises to its final value;
 * `expected` is the charge the caller looks for: once the balance is back to `before − expected`
 * (or higher) the wait is over, else it ends after `ms` with what was charged by then.
 */
export async function costOf(t: SttTarget, expected: number, request: () => Promise<unknown>, ms = 10_000): Promise<number> {
  const before = await remaining(t);
  await request();
  const end = Date.now() + ms;
  let now = await remaining(t);
  while (now < before - expected && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    now = await remaining(t);
  }
  // A moment more: a balance that passed the expected value would show it.
  await new Promise((r) => setTimeout(r, 100));
  return before - (await remaining(t));
}

/** POST /post/speech/asr with `pcm` (24 kHz s16le) and an optional `json_config` query: status and body. */
export async function postAsr(t: SttTarget, pcm: Uint8Array, jsonConfig?: string): Promise<{ status: number; body: string }> {
  const q = jsonConfig === undefined ? '' : `?json_config=${encodeURIComponent(jsonConfig)}`;
  const r = await fetch(`${t.base}/post/speech/asr${q}`, { method: 'POST', headers: { 'x-api-key': t.key, 'content-type': 'audio/pcm' }, body: pcm as Uint8Array<ArrayBuffer> });
  return { status: r.status, body: await r.text() };
}

/** Steps sent before the first `text` message (the frame its text came out with). */
export function stepsBeforeText(messages: Message[]): number {
  const at = messages.findIndex((m) => m['type'] === 'text');
  if (at < 0) throw new Error(`no text in ${JSON.stringify(messages.map((m) => m['type']))}`);
  return messages.slice(0, at).filter((m) => m['type'] === 'step').length;
}

/** The delays the service's Python client documents. */
export const DOCUMENTED_DELAYS = [7, 8, 10, 12, 14, 16, 20, 24, 36, 48];

/** 0.96 s sent three ways (one piece; with one flush; with three flushes, pieces not on the frame grid). */
export function flushedPieces(flushes: 0 | 1 | 3): Message[] {
  const cuts: number[] = { 0: [0.96], 1: [0.5, 0.46], 3: [0.3, 0.3, 0.3, 0.06] }[flushes];
  const out: Message[] = [];
  cuts.forEach((s, i) => {
    out.push(...audioMessages(silence(s)));
    if (i < cuts.length - 1) out.push({ type: 'flush', flush_id: i + 1 });
  });
  return out;
}
