/// <reference types="vite/client" />
/**
 * Issue 11 §13 for the service's entries: `voicewire/server` (createVoiceServer, the config, keys,
 * the stores) and `voicewire/engines` (espeak, pocketsphinx, the VAD), under the same random
 * argument shapes as the core (see api-fuzz.test.ts): only VoicewireErrors, never a hang.
 *
 * openStore is left out: it opens database files at the paths it is given (a random string
 * would be a file in the working directory). Its arguments are tested with the stores, in
 * test/server/store. The two namespaces are fuzzed side by side (both export a `catalogVoices`).
 */
import { describe, expect, it } from 'vitest';
import * as serverApi from '../../src/server/index.js';
import * as enginesApi from '../../src/engines/index.js';
import { entriesOf, fuzzContext, fuzzEntries, fuzzMembers, RUNS } from '../helpers/api-fuzz.js';

const ctx = fuzzContext({
  modules: import.meta.glob(['../../src/{server,engines}/**/*.ts', '!../../src/**/index.ts'], { eager: true }),
  sources: import.meta.glob('../../src/**/*.ts', { eager: true, query: '?raw', import: 'default' }),
});
const { openStore: _openStore, ...server } = serverApi;
const entries = [...entriesOf(ctx, server), ...entriesOf(ctx, enginesApi)];

describe('attacks: voicewire/server and voicewire/engines under random argument shapes (issue 11 §13)', () => {
  it('covers their exports, each attributed to its module', () => {
    expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(['createVoiceServer', 'resolveServerConfig', 'MemoryStore', 'createEspeakTtsEngine', 'VoiceActivity', 'bootstrap']));
    expect(entries.filter((e) => e.name === 'catalogVoices')).toHaveLength(2);
    expect(entries.filter((e) => e.module === '?').map((e) => e.name)).toEqual([]);
  });

  it('entry points: only VoicewireErrors, each call bounded in time', async () => {
    expect(await fuzzEntries(ctx, entries)).toEqual([]);
  }, 240_000);

  it('methods of what they return: only VoicewireErrors', async () => {
    const { failures, objects, calls } = await fuzzMembers(ctx, entries);
    expect(objects).toBeGreaterThan(5);
    expect(calls).toBeGreaterThan(5 * RUNS);
    expect(failures).toEqual([]);
  }, 240_000);
});
