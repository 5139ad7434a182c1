/**
 * Shipped migrations never change (sql-migrations.ts): both stores render version 1 from one
 * template in their dialect's column types, so an edit to the template or to a dialect's types
 * would silently change what a fresh database gets. These are the SQL texts as they shipped
 * (sha-256 of each, taken from the hand-written lists before the template).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { POSTGRES_MIGRATIONS } from '../../../src/server/store/postgres-migrations.js';
import { SQLITE_MIGRATIONS } from '../../../src/server/store/sqlite-migrations.js';
import type { Migration } from '../../../src/server/store/sql-migrations.js';

const shipped = (list: readonly Migration[]): [number, string][] => list.map((m) => [m.version, createHash('sha256').update(m.sql).digest('hex')]);

describe('shipped migrations', () => {
  it('SQLite: versions 1 and 2 are the SQL they shipped with', () => {
    expect(shipped(SQLITE_MIGRATIONS).slice(0, 2)).toEqual([
      [1, '6cab933ec4bbc9232fe3501c00af59cd5b43f9a83c79cac2f4908ba941c662fb'],
      [2, 'fd63d5d00f4d4b7137e143fde1da37de36cabc4aaceae9088d3d077294800724'],
    ]);
  });

  it('Postgres: versions 1 and 2 are the SQL they shipped with', () => {
    expect(shipped(POSTGRES_MIGRATIONS).slice(0, 2)).toEqual([
      [1, '204f02cc0f0b26a47772f880eeb3fdae15566ab31430fab04af5719afb88a78f'],
      [2, '8050dfac4482127844acd3d3c81c86ba37039215f405eba53a0793a3c7c0b26d'],
    ]);
  });

  it('both lists have the same versions, in order', () => {
    expect(POSTGRES_MIGRATIONS.map((m) => m.version)).toEqual(SQLITE_MIGRATIONS.map((m) => m.version));
    expect(SQLITE_MIGRATIONS.map((m) => m.version)).toEqual(SQLITE_MIGRATIONS.map((_, i) => i + 1));
  });
});
