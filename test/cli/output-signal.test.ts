/**
 * Ctrl-C just after `convert` made its temporary file was sometimes lost (issue 25: the safety
 * test's CLI ignored SIGINT 1–2 times in 40): the guard that removes the file was taken off and
 * another put on, and node drops a signal that arrives while a signal has no listener (it closes
 * the signal's handle, and libuv the event already queued for it). The guard must stay on, from
 * before the file exists until it is renamed or removed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openOutput } from '../../src/cli/output.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the temporary file of an output', () => {
  it('keeps its SIGINT guard on without a gap from before the file exists until commit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vw-output-signal-'));
    dirs.push(dir);
    const base = process.listenerCount('SIGINT');
    // SIGINT listeners (above those already there) after each change while the output opens.
    const counts: number[] = [];
    const record = (): void => void counts.push(process.listenerCount('SIGINT') - base);
    const once = process.once.bind(process);
    const remove = process.removeListener.bind(process);
    process.once = ((event: string, listener: (...args: unknown[]) => void) => {
      const r = once(event, listener);
      if (event === 'SIGINT') record();
      return r;
    }) as typeof process.once;
    process.removeListener = ((event: string, listener: (...args: unknown[]) => void) => {
      const r = remove(event, listener);
      if (event === 'SIGINT') record();
      return r;
    }) as typeof process.removeListener;
    let out;
    try {
      out = await openOutput(join(dir, 'out.raw'));
    } finally {
      process.once = once;
      process.removeListener = remove;
    }
    // A guard went on and was never off while the file existed (before: 1, 0, 1).
    expect(counts[0]).toBe(1);
    expect(counts).not.toContain(0);
    expect(process.listenerCount('SIGINT') - base).toBe(1);
    await out.write(new Uint8Array(10));
    await out.commit();
    expect(process.listenerCount('SIGINT')).toBe(base);
  });
});
