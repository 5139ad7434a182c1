/**
 * The store's files hold key hashes and usage: the data folder is 0700 and the database, its WAL,
 * SHM and journal 0600 (README "Storage"), whatever mode a checkout or a copy left them in.
 */
import { chmodSync, statSync } from 'node:fs';

/** Removes group and other permissions from `path` (a missing path or a private one is left as is). */
export function tighten(path: string, mode: 0o700 | 0o600): void {
  const st = statSync(path, { throwIfNoEntry: false });
  if (st !== undefined && (st.mode & 0o077) !== 0) chmodSync(path, mode);
}
