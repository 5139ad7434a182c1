/**
 * The SQLite schema, as versioned migrations. Each runs once, in order, inside the transaction that
 * records it in `schema_migrations`, so a crash mid-migration leaves the previous version intact.
 * Never edit a migration that has shipped: add the next one. The Postgres store keeps its own list
 * with the same versions and the same tables (types differ: BOOLEAN, JSONB, TIMESTAMPTZ).
 *
 * Conventions: times the store compares (expiry, usage `at`) are kept twice, as the ISO text the
 * caller gave (returned unchanged) and as epoch milliseconds (`*_ms`, compared and indexed); JSON
 * columns are TEXT checked by json_valid; booleans are 0/1.
 */

/** One schema step. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'organizations, keys, tokens, usage, voices, candidates, dictionaries',
    sql: `
CREATE TABLE organizations (
  id                 TEXT PRIMARY KEY,
  name               TEXT NOT NULL UNIQUE,
  region             TEXT,
  allocated_credits  INTEGER NOT NULL CHECK (allocated_credits >= 0),
  -- docs/api.md §2.5; the CHECK is the last line of defence behind the debit's WHERE.
  remaining_credits  INTEGER NOT NULL CHECK (remaining_credits >= 0),
  billing_period     TEXT NOT NULL,
  next_rollover_date TEXT NOT NULL,
  plan_name          TEXT NOT NULL,
  created_at         TEXT NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  org_id     TEXT NOT NULL REFERENCES organizations(id),
  hash       TEXT NOT NULL UNIQUE,
  admin      INTEGER NOT NULL CHECK (admin IN (0, 1)),
  revoked    INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),
  prefix     TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX api_keys_by_org ON api_keys (org_id);

-- docs/api.md §2.6: a token row holds the key's id and the expiry, never the key.
CREATE TABLE tokens (
  hash       TEXT PRIMARY KEY,
  key_id     TEXT NOT NULL REFERENCES api_keys(id),
  expires_at TEXT NOT NULL,
  expires_ms INTEGER NOT NULL
);
CREATE INDEX tokens_by_expiry ON tokens (expires_ms);

CREATE TABLE usage (
  id      INTEGER PRIMARY KEY,
  org_id  TEXT NOT NULL REFERENCES organizations(id),
  key_id  TEXT,
  kind    TEXT NOT NULL CHECK (kind IN ('tts', 'stt')),
  units   REAL NOT NULL,
  credits INTEGER NOT NULL,
  at      TEXT NOT NULL,
  at_ms   INTEGER NOT NULL
);
CREATE INDEX usage_by_org_time ON usage (org_id, at_ms);

CREATE TABLE voices (
  uid          TEXT PRIMARY KEY,
  org_id       TEXT REFERENCES organizations(id),
  name         TEXT NOT NULL,
  description  TEXT NOT NULL,
  language     TEXT NOT NULL,
  filename     TEXT NOT NULL,
  start_s      REAL NOT NULL,
  tags         TEXT NOT NULL CHECK (json_valid(tags)),
  is_pro_clone INTEGER NOT NULL CHECK (is_pro_clone IN (0, 1)),
  params       TEXT NOT NULL CHECK (json_valid(params)),
  created_at   TEXT NOT NULL
);
CREATE INDEX voices_by_org ON voices (org_id, created_at, uid);

CREATE TABLE candidates (
  embedding_id TEXT PRIMARY KEY,
  org_id       TEXT NOT NULL REFERENCES organizations(id),
  language     TEXT NOT NULL,
  prompt       TEXT NOT NULL,
  params       TEXT NOT NULL CHECK (json_valid(params)),
  expires_at   TEXT NOT NULL,
  expires_ms   INTEGER NOT NULL
);
CREATE INDEX candidates_by_expiry ON candidates (expires_ms);

CREATE TABLE dictionaries (
  uid         TEXT PRIMARY KEY,
  org_id      TEXT NOT NULL REFERENCES organizations(id),
  name        TEXT NOT NULL,
  language    TEXT NOT NULL,
  description TEXT NOT NULL,
  rules       TEXT NOT NULL CHECK (json_valid(rules)),
  created_at  TEXT NOT NULL
);
CREATE INDEX dictionaries_by_org ON dictionaries (org_id, created_at, uid);
`,
  },
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
];
