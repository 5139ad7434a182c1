import { describe, expect, it } from 'vitest';
import { loadFixtures, replayClient, replayServer } from './replay.js';

const fixtures = loadFixtures();

describe('session fixtures (fixtures/sessions/*.jsonl) replayed against the server machines', () => {
  it('there are STT and TTS fixtures', () => {
    expect(fixtures.filter((f) => f.meta.route === 'stt').length).toBeGreaterThanOrEqual(10);
    expect(fixtures.filter((f) => f.meta.route === 'tts').length).toBeGreaterThanOrEqual(6);
  });

  it('every row of the docs/api.md §3.2 table is covered by a fixture', () => {
    const rows = [
      'connected+setup->configured',
      'connected+any other message first->closed',
      'configured+audio->streaming',
      'streaming+flush->streaming',
      'streaming+end_of_stream->finished',
      'finished+close_ws_on_eos true->closed',
      'finished+close_ws_on_eos false->configured',
      'any+server error->closed',
    ];
    const text = fixtures.map((f) => f.meta.description).join('\n');
    expect(rows.filter((r) => !text.includes(r))).toEqual([]);
  });

  for (const fixture of fixtures) {
    it(`server: ${fixture.name} — ${fixture.meta.description.slice(0, 90)}`, async () => {
      await replayServer(fixture);
    });
  }
});

describe('session fixtures replayed against the client machines', () => {
  for (const fixture of fixtures.filter((f) => f.meta.client !== false)) {
    it(`client: ${fixture.name}`, () => {
      const { events } = replayClient(fixture);
      // No client-side protocol error in a conversation the spec allows.
      const local = events.filter((e) => e['type'] === 'error' && (e['error'] as { code: string }).code !== 'PROTOCOL_SERVER_ERROR');
      expect(local).toEqual([]);
    });
  }
});

describe('the same fixtures with an asynchronous engine (each call resolves later)', () => {
  for (const fixture of fixtures.filter((f) => f.meta.engine['async'] !== true)) {
    it(`server (async engine): ${fixture.name}`, async () => {
      await replayServer(fixture, { async: true });
    });
  }
});
