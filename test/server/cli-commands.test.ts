/**
 * `voicewire keys` and `voicewire pronunciations` (the dictionary file reader; the store behind
 * them is the store engineer's, so the end-to-end run uses `--store memory:`).
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseDictionaryFile } from '../../src/cli/pronunciations.js';

const root = join(import.meta.dirname, '../..');
const cli = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), ...args], { cwd: root, encoding: 'utf8', timeout: 15_000 });

describe('voicewire keys', () => {
  it('create prints the key alone on stdout (≥ 128 random bits)', () => {
    const r = cli('keys', 'create', '--org', 'acme', '--credits', '10', '--store', 'memory:');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^vw_[A-Za-z0-9_-]{32}\n$/);
  });

  it('bad arguments exit 1 with a usage message', () => {
    const r = cli('keys', 'create', '--credits', 'lots', '--store', 'memory:');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('--credits must be an integer');
  });
});

describe('pronunciations import: the file formats', () => {
  it('JSON dictionary, bare JSON rules, and text lines', () => {
    expect(parseDictionaryFile('{"name":"n","language":"fr","rules":[{"word":"a","replacement":"b"}]}')).toEqual({ name: 'n', language: 'fr', rules: [{ word: 'a', replacement: 'b', kind: 'respelling' }] });
    expect(parseDictionaryFile('[{"word":"x","replacement":"ks","kind":"phonemes"}]').rules).toEqual([{ word: 'x', replacement: 'ks', kind: 'phonemes' }]);
    expect(parseDictionaryFile('# brands\nvw\tvoicewire\nTTS = text to speech\n\n').rules).toEqual([
      { word: 'vw', replacement: 'voicewire', kind: 'respelling' },
      { word: 'TTS', replacement: 'text to speech', kind: 'respelling' },
    ]);
    expect(() => parseDictionaryFile('just one word\n')).toThrow(/line 1/);
    expect(() => parseDictionaryFile('[{"word":"x"}]')).toThrow(/replacement/);
  });
});
