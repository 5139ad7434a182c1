/**
 * A connection checked out for a transaction listens for errors from the moment the pool hands
 * it over (issue 36's Postgres restart under a few hundred sessions ended an instance): the pool
 * readies a connection while reading the server's data, and the server's "terminating connection
 * due to administrator command" (`pg_ctl stop -m fast`) may come in that same read, before code
 * that awaited the connection runs. The pool here is a stand-in that does exactly that; the real
 * store's transaction must fail with STORE_UNAVAILABLE, not end the process with an unhandled
 * 'error'.
 */
import { EventEmitter } from 'node:events';
import { expect, it } from 'vitest';
import { PostgresStore } from '../../../src/server/store/postgres-store.js';
import { isVoicewireError } from '../../../src/util/errors.js';

/** A pooled connection whose server is gone: every query fails. */
class DyingClient extends EventEmitter {
  async query(): Promise<never> {
    throw new Error('Connection terminated unexpectedly');
  }
  release(): void {}
}

/** pg.Pool's connect, both forms: hands a connection over, then its server's FATAL in the same turn. */
const dyingPool = {
  connect(cb?: (err: Error | undefined, client: DyingClient, done: () => void) => void): Promise<DyingClient> | undefined {
    const client = new DyingClient();
    const handOver = (deliver: () => void): void =>
      void setImmediate(() => {
        deliver();
        client.emit('error', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
      });
    if (cb) {
      handOver(() => cb(undefined, client, () => client.release()));
      return undefined;
    }
    return new Promise((resolve) => handOver(() => resolve(client)));
  },
  async end(): Promise<void> {},
};

it('a transaction whose connection is terminated as it is handed over fails STORE_UNAVAILABLE (no unhandled error)', async () => {
  const store = new PostgresStore('postgres://voicewire@127.0.0.1:1/none');
  (store as unknown as { pgDriver: { pool: unknown } }).pgDriver.pool = dyingPool;
  const outcome = await store.settleCredits('org', '1', { units: 0, credits: 0 }).then(
    () => 'resolved',
    (e: unknown) => (isVoicewireError(e) ? e.code : String(e)),
  );
  expect(outcome).toBe('STORE_UNAVAILABLE');
  await store.close();
});
