/**
 * What a killed instance's live sessions pay (issue 36): a `voicewire serve` (SQLite folder,
 * heartbeat every 200 ms, dead after 1 s) holds a TTS WebSocket session's credits (its text plus
 * the hold's margin, 256 characters) and an STT session's (its first second plus 5 ahead); it is
 * killed with SIGKILL after the sessions' audio was delivered and a heartbeat recorded it. A second
 * instance on the same folder sweeps: each organization is charged exactly what its client was
 * delivered (the TTS text up to the last word it heard; the STT seconds it sent), the rest of the holds
 * goes back. Before: each was charged its whole hold.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureOrganization } from '../../src/server/bootstrap.js';
import { createKey } from '../../src/server/keys.js';
import { SqliteStore } from '../../src/server/store/sqlite-store.js';
import { connect } from './harness.js';
import { startServe, type ServeProcess } from './instances/serve-process.js';

const dir = mkdtempSync(join(tmpdir(), 'vw-killed-'));
const started: ServeProcess[] = [];
const FAST = ['--data', dir, '--no-bootstrap', '--instance-heartbeat-ms', '200', '--instance-timeout-ms', '1000'];
const CREDITS = 10_000;

afterAll(async () => {
  for (const s of started) await s.stop(5000);
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('a killed instance’s open holds', () => {
  it('are settled by another instance to what each client was delivered, once the killed one’s heartbeat is old', async () => {
    const store = SqliteStore.open(join(dir, 'voicewire.db'));
    await store.migrate();
    const ttsOrg = await ensureOrganization(store, 'speaks', { credits: CREDITS });
    const sttOrg = await ensureOrganization(store, 'listens', { credits: CREDITS });
    const ttsKey = (await createKey(store, ttsOrg.id)).key;
    const sttKey = (await createKey(store, sttOrg.id)).key;
    try {
      const first = await startServe(FAST);
      started.push(first);

      // TTS: one text; the session stays open (its hold too).
      const text = 'hello there friends ';
      const tts = connect(`${first.wsBase}/speech/tts`, { 'x-api-key': ttsKey });
      tts.send({ type: 'setup', output_format: 'pcm_16000' });
      tts.send({ type: 'text', text });
      // Audio is paced in real time, each word's text message with its audio; the last word waits
      // for more text (it may go on), so the client hears "hello there".
      await tts.waitFor((m) => m['type'] === 'text' && m['text'] === 'there');
      // STT: 3 s of audio (37 whole 80 ms frames reach the engine: 3 started seconds), the session left open.
      const stt = connect(`${first.wsBase}/speech/asr`, { 'x-api-key': sttKey });
      stt.send({ type: 'setup', input_format: 'pcm' });
      for (let i = 0; i < 30; i++) stt.send({ type: 'audio', audio: Buffer.alloc(4800).toString('base64') });
      await stt.waitFor((m) => m['type'] === 'ready');
      // Everything sent and answered, then a few heartbeats (each records what the holds delivered).
      await sleep(1500);
      const held = async (orgId: string): Promise<number> => CREDITS - (await store.getOrganization(orgId))!.remainingCredits;
      // The holds run ahead of what was delivered: what the instance's death used to charge.
      expect(await held(ttsOrg.id)).toBe(text.length + 256);
      // STT's first hold, at its first second, took 5 ahead: 6 seconds held for 3 sent.
      expect(await held(sttOrg.id)).toBe(1 + 5);

      first.child.kill('SIGKILL');
      await first.exited;
      await Promise.all([tts.closed, stt.closed]);
      // Another instance on the same store: its start-up sweep, then one every heartbeat, once the killed one is 1 s silent.
      started.push(await startServe(FAST));
      const until = Date.now() + 20_000;
      while (Date.now() < until && ((await held(ttsOrg.id)) === text.length + 256 || (await held(sttOrg.id)) === 6)) await sleep(200);

      // What the TTS client was delivered: the text up to the end of the last word it heard.
      const words = tts.messages.filter((m) => m['type'] === 'text').map((m) => String(m['text']));
      expect(words).toEqual(['hello', 'there']);
      const heard = text.indexOf(words.at(-1)!) + words.at(-1)!.length;
      const since = '1970-01-01T00:00:00Z';
      expect({ held: await held(ttsOrg.id), usage: (await store.usageSummary(ttsOrg.id, since)).tts }).toEqual({ held: heard, usage: { units: heard, credits: heard, requests: 1 } });
      expect({ held: await held(sttOrg.id), usage: (await store.usageSummary(sttOrg.id, since)).stt }).toEqual({ held: 3, usage: { units: 3, credits: 3, requests: 1 } });
    } finally {
      await store.close();
    }
  }, 120_000);
});
