/**
 * The SQLite schema, as versioned migrations (sql-migrations.ts has the rules and the shared
 * version 1). SQLite's types: JSON columns are TEXT checked by json_valid; booleans are 0/1.
 */
import { SQLITE_DIALECT } from './sql-dialect.js';
import { firstSchema, openHoldsSchema, type Migration } from './sql-migrations.js';

export type { Migration } from './sql-migrations.js';

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  firstSchema(SQLITE_DIALECT.types),
  {
    // Issue 20 §7: an admin key was an organization's key that could also drain the instance, so
    // `keys create --org acme --admin` handed a tenant the whole instance. An admin key is now an
    // instance-admin key of no organization (org_id NULL), good for /statusz and /drain only. An
    // existing admin key becomes one: it keeps draining, loses its organization, and the tokens
    // minted from it (an organization's tokens) are deleted. SQLite cannot drop NOT NULL in place:
    // api_keys is rebuilt, and tokens (which reference it) around it.
    version: 2,
    name: 'instance-admin keys belong to no organization',
    sql: `
CREATE TEMP TABLE tokens_kept AS SELECT t.* FROM tokens t JOIN api_keys k ON k.id = t.key_id WHERE k.admin = 0;
DROP TABLE tokens;
CREATE TABLE api_keys_v2 (
  id         TEXT PRIMARY KEY,
  org_id     TEXT REFERENCES organizations(id),
  hash       TEXT NOT NULL UNIQUE,
  admin      INTEGER NOT NULL CHECK (admin IN (0, 1)),
  revoked    INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),
  prefix     TEXT NOT NULL,
  created_at TEXT NOT NULL,
  -- One thing each: an organization's key, or the instance's admin key.
  CHECK ((admin = 1) = (org_id IS NULL))
);
INSERT INTO api_keys_v2 (rowid, id, org_id, hash, admin, revoked, prefix, created_at)
  SELECT rowid, id, CASE WHEN admin = 1 THEN NULL ELSE org_id END, hash, admin, revoked, prefix, created_at FROM api_keys;
DROP TABLE api_keys;
ALTER TABLE api_keys_v2 RENAME TO api_keys;
CREATE INDEX api_keys_by_org ON api_keys (org_id);
CREATE TABLE tokens (
  hash       TEXT PRIMARY KEY,
  key_id     TEXT NOT NULL REFERENCES api_keys(id),
  expires_at TEXT NOT NULL,
  expires_ms INTEGER NOT NULL
);
CREATE INDEX tokens_by_expiry ON tokens (expires_ms);
INSERT INTO tokens SELECT * FROM tokens_kept;
DROP TABLE tokens_kept;
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
  openHoldsSchema(SQLITE_DIALECT.types),
];
