/**
 * Opens the server's store from the command line's `--data DIR` / `--store URL`
 * (VOICEWIRE_DATA / VOICEWIRE_STORE). The embedded SQLite file in DATA is the default;
 * `postgres://…` selects Postgres.
 */
import { VoicewireError } from '../../util/errors.js';
import type { Store } from './store.js';

/** Where the store lives. */
export interface OpenStoreOptions {
  /** Data folder; the SQLite file is `<data>/voicewire.db`. Default `./voicewire-data`. */
  data?: string;
  /** A store URL (`sqlite:PATH`, `postgres://…`); wins over `data`. */
  store?: string;
}

/** Opens and migrates the store the options name. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  // Replaced by the SQLite implementation (src/server/store/sqlite-store.ts).
  throw new VoicewireError('STORE_UNAVAILABLE', `no store implementation for ${options.store ?? options.data ?? 'the default data folder'}`);
}
