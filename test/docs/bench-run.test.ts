import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('npm run bench (bench/run.ts)', () => {
  it('exits non-zero on an unknown suite and names the known ones, running nothing', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', 'nonexistent'], { cwd: root, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown suite nonexistent');
    for (const suite of ['g711', 'resampler', 'pipelines']) expect(r.stderr).toContain(suite);
    expect(r.stdout).not.toContain('===');
  });

  it('writes bench/results/ only with --save', async () => {
    const { saveFile, saving } = await import('../../bench/util.js');
    const before = { env: process.env.VOICEWIRE_BENCH_SAVE, argv: process.argv };
    try {
      process.env.VOICEWIRE_BENCH_SAVE = '0';
      process.argv = [...before.argv.filter((a) => a !== '--save')];
      expect(saving()).toBe(false);
      saveFile('never-written-by-a-test.json', '{}');
      expect(existsSync(new URL('../../bench/results/never-written-by-a-test.json', import.meta.url))).toBe(false);
      process.env.VOICEWIRE_BENCH_SAVE = '1';
      expect(saving()).toBe(true);
    } finally {
      if (before.env === undefined) delete process.env.VOICEWIRE_BENCH_SAVE;
      else process.env.VOICEWIRE_BENCH_SAVE = before.env;
      process.argv = before.argv;
    }
  });
});
