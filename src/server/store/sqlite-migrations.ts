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
  -- service-api.md §2.5; the CHECK is the last line of defence behind the debit's WHERE.
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

-- service-api.md §2.6: a token row holds the key's id and the expiry, never the key.
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
];
