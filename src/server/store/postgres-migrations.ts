/**
 * The Postgres schema, as versioned migrations (sql-migrations.ts has the rules and the shared
 * version 1), in Postgres types (BIGINT credits and epoch milliseconds, BOOLEAN, JSONB, DOUBLE
 * PRECISION; Postgres DDL is transactional, so a failed step leaves the previous version whole).
 *
 * Differences from SQLite, each for a reason: `api_keys.seq` stands in for SQLite's rowid (listings
 * in insertion order); `usage.id` is an identity column; the text columns listings sort on are
 * `COLLATE "C"` so the order is bytewise, as in SQLite, whatever the database's locale.
 */
import { POSTGRES_DIALECT } from './sql-dialect.js';
import { firstSchema, openHoldsSchema, type Migration } from './sql-migrations.js';

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  firstSchema(POSTGRES_DIALECT.types),
  {
    // As SQLite's version 2 (sqlite-migrations.ts): an admin key is the instance's, of no organization.
    version: 2,
    name: 'instance-admin keys belong to no organization',
    sql: `
DELETE FROM tokens WHERE key_id IN (SELECT id FROM api_keys WHERE admin);
ALTER TABLE api_keys ALTER COLUMN org_id DROP NOT NULL;
UPDATE api_keys SET org_id = NULL WHERE admin;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_admin_has_no_org CHECK (admin = (org_id IS NULL));
`,
  },
  {
    // Issue 23: the catalog voices (orgId NULL) are derived from the engines at every start and
    // served from memory (src/server/catalog-voices.ts). The rows earlier versions seeded are stale
    // (tone-* voices outlived a change to espeak-ng): deleted.
    version: 3,
    name: 'catalog voices are derived at start, not stored',
    sql: `
DELETE FROM voices WHERE org_id IS NULL;
`,
  },
  openHoldsSchema(POSTGRES_DIALECT.types),
];
