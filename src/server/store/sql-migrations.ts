/**
 * The schema both SQL stores share, as versioned migrations: the same versions, tables and columns
 * on SQLite (sqlite-migrations.ts) and Postgres (postgres-migrations.ts), in each one's column
 * types (sql-dialect.ts). Each migration runs once, in order, inside the transaction that records
 * it in `schema_migrations`, so a failed step leaves the previous version whole. Never edit a
 * migration that has shipped, nor the column types it is written in: add the next one, to both
 * lists (test/server/store/migrations.test.ts pins the SQL of the shipped ones).
 *
 * Conventions: times the store compares (expiry, usage `at`) are kept twice, as the ISO text the
 * caller gave (returned unchanged) and as epoch milliseconds (`*_ms`, compared and indexed).
 */
import type { ColumnTypes } from './sql-dialect.js';

/** One schema step. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Version 1: organizations, keys, tokens, usage, voices, candidates, dictionaries. */
export function firstSchema(t: ColumnTypes): Migration {
  return {
    version: 1,
    name: 'organizations, keys, tokens, usage, voices, candidates, dictionaries',
    sql: `
CREATE TABLE organizations (
  id                 TEXT PRIMARY KEY,
  name               TEXT NOT NULL UNIQUE,
  region             TEXT,
  allocated_credits  ${t.integer} NOT NULL CHECK (allocated_credits >= 0),
  -- docs/api.md §2.5; the CHECK is the last line of defence behind the debit's WHERE.
  remaining_credits  ${t.integer} NOT NULL CHECK (remaining_credits >= 0),
  billing_period     TEXT NOT NULL,
  next_rollover_date TEXT NOT NULL,
  plan_name          TEXT NOT NULL,
  created_at         TEXT NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
${t.keySeq}  org_id     TEXT NOT NULL REFERENCES organizations(id),
  hash       TEXT NOT NULL UNIQUE,
  admin      ${t.bool('admin')},
  revoked    ${t.bool('revoked', false)},
  prefix     TEXT NOT NULL,
  created_at ${t.sortedText} NOT NULL
);
CREATE INDEX api_keys_by_org ON api_keys (org_id);

-- docs/api.md §2.6: a token row holds the key's id and the expiry, never the key.
CREATE TABLE tokens (
  hash       TEXT PRIMARY KEY,
  key_id     TEXT NOT NULL REFERENCES api_keys(id),
  expires_at TEXT NOT NULL,
  expires_ms ${t.integer} NOT NULL
);
CREATE INDEX tokens_by_expiry ON tokens (expires_ms);

CREATE TABLE usage (
  id      ${t.usageId},
  org_id  TEXT NOT NULL REFERENCES organizations(id),
  key_id  TEXT,
  kind    TEXT NOT NULL CHECK (kind IN ('tts', 'stt')),
  units   ${t.real} NOT NULL,
  credits ${t.integer} NOT NULL,
  at      TEXT NOT NULL,
  at_ms   ${t.integer} NOT NULL
);
CREATE INDEX usage_by_org_time ON usage (org_id, at_ms);

CREATE TABLE voices (
  uid          ${t.sortedText} PRIMARY KEY,
  org_id       TEXT REFERENCES organizations(id),
  name         TEXT NOT NULL,
  description  TEXT NOT NULL,
  language     TEXT NOT NULL,
  filename     TEXT NOT NULL,
  start_s      ${t.real} NOT NULL,
  tags         ${t.json('tags')},
  is_pro_clone ${t.bool('is_pro_clone')},
  params       ${t.json('params')},
  created_at   ${t.sortedText} NOT NULL
);
CREATE INDEX voices_by_org ON voices (org_id, created_at, uid);

CREATE TABLE candidates (
  embedding_id TEXT PRIMARY KEY,
  org_id       TEXT NOT NULL REFERENCES organizations(id),
  language     TEXT NOT NULL,
  prompt       TEXT NOT NULL,
  params       ${t.json('params')},
  expires_at   TEXT NOT NULL,
  expires_ms   ${t.integer} NOT NULL
);
CREATE INDEX candidates_by_expiry ON candidates (expires_ms);

CREATE TABLE dictionaries (
  uid         ${t.sortedText} PRIMARY KEY,
  org_id      TEXT NOT NULL REFERENCES organizations(id),
  name        TEXT NOT NULL,
  language    TEXT NOT NULL,
  description TEXT NOT NULL,
  rules       ${t.json('rules')},
  created_at  ${t.sortedText} NOT NULL
);
CREATE INDEX dictionaries_by_org ON dictionaries (org_id, created_at, uid);
`,
  };
}

/**
 * Version 4 (issue 36): open holds know their instance. A hold is a usage line charged in full
 * until its request settles it (credits.ts), so an instance that died between hold and settlement
 * (`kill -9`, a crash) left its organizations charged up to 1,024 characters or 60 s beyond what
 * they were delivered. Now the line names the instance holding it open (`holder`, NULL once
 * settled and on every line written before) and what it had delivered at its last checkpoint; each
 * instance's heartbeat is in `instances`; a sweep on every instance settles the holds of an
 * instance whose heartbeat stopped to their checkpoint (sql-store.ts sweepOrphanHolds).
 */
export function openHoldsSchema(t: ColumnTypes): Migration {
  return {
    version: 4,
    name: 'open holds name their instance; instances heartbeat',
    sql: `
ALTER TABLE usage ADD COLUMN holder TEXT;
ALTER TABLE usage ADD COLUMN delivered_units ${t.real} NOT NULL DEFAULT 0;
ALTER TABLE usage ADD COLUMN delivered_credits ${t.integer} NOT NULL DEFAULT 0;
-- The sweep reads open holds only: a partial index stays as small as the holds open now.
CREATE INDEX usage_open_holds ON usage (at_ms) WHERE holder IS NOT NULL;
CREATE TABLE instances (
  id           TEXT PRIMARY KEY,
  heartbeat_ms ${t.integer} NOT NULL
);
`,
  };
}
