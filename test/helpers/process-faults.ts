/**
 * Fails a test file when anything reaches the process's last handlers during it: an
 * `unhandledRejection` or an `uncaughtException` (in production either one ends the server with
 * every tenant's sessions, issue 20). Call once at the top of a file; afterAll asserts none came.
 */
import { afterAll, beforeAll, expect } from 'vitest';

export function failOnProcessFaults(): { faults: string[] } {
  const faults: string[] = [];
  const describe = (e: unknown): string => (e instanceof Error ? `${e.name}: ${e.message}` : String(e)).slice(0, 300);
  const onRejection = (reason: unknown): void => void faults.push(`unhandledRejection ${describe(reason)}`);
  const onException = (err: unknown): void => void faults.push(`uncaughtException ${describe(err)}`);
  beforeAll(() => {
    process.on('unhandledRejection', onRejection);
    process.on('uncaughtException', onException);
  });
  afterAll(() => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
    expect(faults, 'nothing may reach the process-level handlers').toEqual([]);
  });
  return { faults };
}
