/**
 * One tenant's saturating load must not cost another tenant its latency or its requests (issue 31,
 * finding 2), against the built server with its default engines (espeak-ng WebAssembly,
 * pocketsphinx): a shorter run of bench/tenant-fairness.ts, asserting against an idle baseline
 * measured in the same run (ratios, with slack for a busy 2-core machine).
 *
 * - TTS: while ONE socket of organization A holds 70 multiplexed long requests, organization B's
 *   TTS sessions are never refused (before: 8 to 16 of 20 got `1011 espeak-ng (WebAssembly) has 64
 *   syntheses waiting`), and their time to first audio stays within twice the idle one, with slack
 *   (the flood's running synthesis is interrupted for them). Before: p50 3.6 s against 7 ms idle,
 *   10 of 10 refused; after: 9 ms against 8 ms, none refused (bench/tenant-fairness.ts).
 * - STT: while one key of A runs eight STT streams of long speech, B's 4 s POST is never refused
 *   and its p50 stays within a few times the idle one (on this shared 2-core machine, before:
 *   5.3× to 9.8×; after: 3.8× to 5.8×).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measureStt, measureTts, startTwoTenants } from '../../bench/tenant-fairness.js';
import { bugLines, type BuiltServer } from './built-server.js';
import { describeBuilt } from './describe-built.js';

/** Slack for a busy machine: the bounds below are this many times the goal (2× idle). */
const SLACK = 2;
/** Timer and scheduling jitter of a loaded 2-core machine, ms: an idle TTFA of 8 ms doubled is below it. */
const JITTER_MS = 50;
/** STT's slack: a 4 s POST shares the machine's cores with the eight streams' decoding. */
const STT_SLACK = 3;

describeBuilt('fair shares of the shared engines (built server, issue 31)', () => {
  let dir: string;
  let s: BuiltServer;
  let otherKey: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vw-fair-'));
    ({ s, otherKey } = await startTwoTenants(dir));
  }, 180_000);

  afterAll(async () => {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("another organization's TTS sessions are never refused, and their first audio is not held behind one socket's 70 requests", async () => {
    const r = await measureTts(s, s.key, otherKey, 10);
    const info = JSON.stringify(r);
    expect(r.idle.refused, info).toEqual([]);
    expect(r.loaded.refused, info).toEqual([]);
    // Goal: 2× the idle p50; with slack.
    expect(r.loaded.p50, info).toBeLessThanOrEqual(SLACK * 2 * r.idle.p50 + JITTER_MS);
    expect(s.alive()).toBe(true);
    expect(bugLines(s.output())).toEqual([]);
  }, 300_000);

  it("another organization's 4 s STT POST is never refused and keeps its latency while one key runs eight streams", async () => {
    const r = await measureStt(s, s.key, otherKey, 3);
    const info = JSON.stringify(r);
    expect(r.idle.refused, info).toEqual([]);
    expect(r.loaded.refused, info).toEqual([]);
    expect(r.loaded.p50, info).toBeLessThanOrEqual(STT_SLACK * 2 * r.idle.p50);
    expect(s.alive()).toBe(true);
    expect(bugLines(s.output())).toEqual([]);
  }, 600_000);
});
