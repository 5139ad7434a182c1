/**
 * The Postgres schema: the same versions and tables as sqlite-migrations.ts, in Postgres types
 * (BIGINT credits and epoch milliseconds, BOOLEAN, JSONB, DOUBLE PRECISION). Times the store
 * compares are kept, as in SQLite, both as the caller's ISO text and as `*_ms`. `seq` on api_keys
 * gives listings the insertion order SQLite's rowid gives.
 */
import type { Migration } from './sqlite-migrations.js';

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'organizations, keys, tokens, usage, voices, candidates, dictionaries',
    sql: `
CREATE TABLE organizations (
  id                 TEXT PRIMARY KEY,
  name               TEXT NOT NULL CONSTRAINT organizations_name_key UNIQUE,
  region             TEXT,
  allocated_credits  BIGINT NOT NULL CHECK (allocated_credits >= 0),
  remaining_credits  BIGINT NOT NULL CHECK (remaining_credits >= 0),
  billing_period     TEXT NOT NULL,
  next_rollover_date TEXT NOT NULL,
  plan_name          TEXT NOT NULL,
  created_at         TEXT NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  org_id     TEXT NOT NULL CONSTRAINT api_keys_org_fk REFERENCES organizations(id),
  hash       TEXT NOT NULL UNIQUE,
  admin      BOOLEAN NOT NULL,
  revoked    BOOLEAN NOT NULL DEFAULT false,
  prefix     TEXT NOT NULL,
  created_at TEXT NOT NULL,
  seq        BIGSERIAL
);
CREATE INDEX api_keys_by_org ON api_keys (org_id);

CREATE TABLE tokens (
  hash       TEXT PRIMARY KEY,
  key_id     TEXT NOT NULL CONSTRAINT tokens_key_fk REFERENCES api_keys(id),
  expires_at TEXT NOT NULL,
  expires_ms BIGINT NOT NULL
);
CREATE INDEX tokens_by_expiry ON tokens (expires_ms);

CREATE TABLE usage (
  id      BIGSERIAL PRIMARY KEY,
  org_id  TEXT NOT NULL CONSTRAINT usage_org_fk REFERENCES organizations(id),
  key_id  TEXT,
  kind    TEXT NOT NULL CHECK (kind IN ('tts', 'stt')),
  units   DOUBLE PRECISION NOT NULL,
  credits BIGINT NOT NULL,
  at      TEXT NOT NULL,
  at_ms   BIGINT NOT NULL
);
CREATE INDEX usage_by_org_time ON usage (org_id, at_ms);

CREATE TABLE voices (
  uid          TEXT PRIMARY KEY,
  org_id       TEXT CONSTRAINT voices_org_fk REFERENCES organizations(id),
  name         TEXT NOT NULL,
  description  TEXT NOT NULL,
  language     TEXT NOT NULL,
  filename     TEXT NOT NULL,
  start_s      DOUBLE PRECISION NOT NULL,
  tags         JSONB NOT NULL,
  is_pro_clone BOOLEAN NOT NULL,
  params       JSONB NOT NULL,
  created_at   TEXT NOT NULL
);
CREATE INDEX voices_by_org ON voices (org_id, created_at COLLATE "C", uid COLLATE "C");

CREATE TABLE candidates (
  embedding_id TEXT PRIMARY KEY,
  org_id       TEXT NOT NULL CONSTRAINT candidates_org_fk REFERENCES organizations(id),
  language     TEXT NOT NULL,
  prompt       TEXT NOT NULL,
  params       JSONB NOT NULL,
  expires_at   TEXT NOT NULL,
  expires_ms   BIGINT NOT NULL
);
CREATE INDEX candidates_by_expiry ON candidates (expires_ms);

CREATE TABLE dictionaries (
  uid         TEXT PRIMARY KEY,
  org_id      TEXT NOT NULL CONSTRAINT dictionaries_org_fk REFERENCES organizations(id),
  name        TEXT NOT NULL,
  language    TEXT NOT NULL,
  description TEXT NOT NULL,
  rules       JSONB NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE INDEX dictionaries_by_org ON dictionaries (org_id, created_at COLLATE "C", uid COLLATE "C");
`,
  },
];
