/**
 * The Postgres schema, as versioned migrations: the same versions and the same tables and columns
 * as sqlite-migrations.ts, in Postgres types (BIGINT credits and epoch milliseconds, BOOLEAN,
 * JSONB, DOUBLE PRECISION). Each runs once, in order, inside the transaction that records it in
 * `schema_migrations` (Postgres DDL is transactional, so a failed step leaves the previous
 * version whole). Never edit a migration that has shipped: add the next one, to both lists.
 *
 * Differences from SQLite, each for a reason: `api_keys.seq` stands in for SQLite's rowid (listings
 * in insertion order); `usage.id` is an identity column; the text columns listings sort on are
 * `COLLATE "C"` so the order is bytewise, as in SQLite, whatever the database's locale.
 */
import type { Migration } from './sqlite-migrations.js';

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'organizations, keys, tokens, usage, voices, candidates, dictionaries',
    sql: `
CREATE TABLE organizations (
  id                 TEXT PRIMARY KEY,
  name               TEXT NOT NULL UNIQUE,
  region             TEXT,
  allocated_credits  BIGINT NOT NULL CHECK (allocated_credits >= 0),
  -- docs/api.md §2.5; the CHECK is the last line of defence behind the debit's WHERE.
  remaining_credits  BIGINT NOT NULL CHECK (remaining_credits >= 0),
  billing_period     TEXT NOT NULL,
  next_rollover_date TEXT NOT NULL,
  plan_name          TEXT NOT NULL,
  created_at         TEXT NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  seq        BIGINT GENERATED ALWAYS AS IDENTITY,
  org_id     TEXT NOT NULL REFERENCES organizations(id),
  hash       TEXT NOT NULL UNIQUE,
  admin      BOOLEAN NOT NULL,
  revoked    BOOLEAN NOT NULL DEFAULT FALSE,
  prefix     TEXT NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX api_keys_by_org ON api_keys (org_id);

-- docs/api.md §2.6: a token row holds the key's id and the expiry, never the key.
CREATE TABLE tokens (
  hash       TEXT PRIMARY KEY,
  key_id     TEXT NOT NULL REFERENCES api_keys(id),
  expires_at TEXT NOT NULL,
  expires_ms BIGINT NOT NULL
);
CREATE INDEX tokens_by_expiry ON tokens (expires_ms);

CREATE TABLE usage (
  id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  org_id  TEXT NOT NULL REFERENCES organizations(id),
  key_id  TEXT,
  kind    TEXT NOT NULL CHECK (kind IN ('tts', 'stt')),
  units   DOUBLE PRECISION NOT NULL,
  credits BIGINT NOT NULL,
  at      TEXT NOT NULL,
  at_ms   BIGINT NOT NULL
);
CREATE INDEX usage_by_org_time ON usage (org_id, at_ms);

CREATE TABLE voices (
  uid          TEXT COLLATE "C" PRIMARY KEY,
  org_id       TEXT REFERENCES organizations(id),
  name         TEXT NOT NULL,
  description  TEXT NOT NULL,
  language     TEXT NOT NULL,
  filename     TEXT NOT NULL,
  start_s      DOUBLE PRECISION NOT NULL,
  tags         JSONB NOT NULL,
  is_pro_clone BOOLEAN NOT NULL,
  params       JSONB NOT NULL,
  created_at   TEXT COLLATE "C" NOT NULL
);
CREATE INDEX voices_by_org ON voices (org_id, created_at, uid);

CREATE TABLE candidates (
  embedding_id TEXT PRIMARY KEY,
  org_id       TEXT NOT NULL REFERENCES organizations(id),
  language     TEXT NOT NULL,
  prompt       TEXT NOT NULL,
  params       JSONB NOT NULL,
  expires_at   TEXT NOT NULL,
  expires_ms   BIGINT NOT NULL
);
CREATE INDEX candidates_by_expiry ON candidates (expires_ms);

CREATE TABLE dictionaries (
  uid         TEXT COLLATE "C" PRIMARY KEY,
  org_id      TEXT NOT NULL REFERENCES organizations(id),
  name        TEXT NOT NULL,
  language    TEXT NOT NULL,
  description TEXT NOT NULL,
  rules       JSONB NOT NULL,
  created_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX dictionaries_by_org ON dictionaries (org_id, created_at, uid);
`,
  },
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
];
