import { readDoc } from '../helpers/docs.js';
import { describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { ERROR_CODES, VoicewireError, isVoicewireError, toVoicewireError } from '../../src/util/errors.js';

describe('VoicewireError', () => {
  it('carries code, message, cause and the close code of its table entry', () => {
    const cause = new Error('inner');
    const e = new VoicewireError('PROTOCOL_SETUP_REQUIRED', 'setup first', { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe('PROTOCOL_SETUP_REQUIRED');
    expect(e.message).toBe('setup first');
    expect(e.cause).toBe(cause);
    expect(e.closeCode).toBe(1008);
    expect(new VoicewireError('PROTOCOL_INTERNAL', 'x').closeCode).toBe(1011);
    expect(new VoicewireError('WAV_TRUNCATED', 'x').closeCode).toBeUndefined();
  });

  it('instanceof holds for an error made by another copy of the class (ESM + CJS)', () => {
    // A structurally separate copy: same brand via Symbol.for, different prototype chain.
    const foreign = new Error('from the other copy') as Error & { code: string };
    Object.defineProperty(foreign, Symbol.for('voicewire.VoicewireError'), { value: true });
    foreign.code = 'WAV_TRUNCATED';
    expect(foreign instanceof VoicewireError).toBe(true);
    expect(isVoicewireError(foreign, 'WAV_TRUNCATED' as never)).toBe(true);
    expect(new Error('plain') instanceof VoicewireError).toBe(false);
    expect(isVoicewireError(null)).toBe(false);
  });

  it('instanceof holds between the built ESM and CJS bundles', async () => {
    const require = createRequire(import.meta.url);
    let cjs: typeof import('../../src/index.js');
    let esm: typeof import('../../src/index.js');
    try {
      cjs = require('../../dist/index.cjs');
      esm = await import('../../dist/index.js' as string);
    } catch {
      throw new Error('dist/ is missing: run `npm run build` (npm install does it through "prepare")');
    }
    expect(cjs.VoicewireError).not.toBe(esm.VoicewireError);
    const fromCjs = new cjs.VoicewireError('FORMAT_UNKNOWN', 'x');
    expect(fromCjs instanceof esm.VoicewireError).toBe(true);
    expect(new esm.VoicewireError('FORMAT_UNKNOWN', 'x') instanceof cjs.VoicewireError).toBe(true);
  });

  it('the core and voicewire/node share one copy of every class in the CJS build too', () => {
    const require = createRequire(import.meta.url);
    const core = require('../../dist/index.cjs');
    const node = require('../../dist/node.cjs');
    // Two copies would mean two libopus heaps and failing instanceof between the entries.
    expect(node.OggOpusEncoder).toBe(core.OggOpusEncoder);
    expect(node.createResampler).toBe(core.createResampler);
    expect(node.VoicewireError).toBe(core.VoicewireError);
  });

  it('toVoicewireError wraps foreign throws and passes ours through', () => {
    const ours = new VoicewireError('INVALID_ARGUMENT', 'x');
    expect(toVoicewireError(ours)).toBe(ours);
    const wrapped = toVoicewireError(new TypeError('boom'));
    expect(wrapped.code).toBe('PROTOCOL_INTERNAL');
    expect(wrapped.message).toBe('boom');
  });

  it('every code is documented in docs/errors.md', () => {
    const readme = readDoc('docs/errors.md');
    const missing = Object.keys(ERROR_CODES).filter((c) => !readme.includes(`\`${c}\``));
    expect(missing).toEqual([]);
  });
});
