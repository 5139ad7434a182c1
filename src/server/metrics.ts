/**
 * Prometheus metrics (prom-client), one registry per server so several servers in one process
 * (tests) do not share counters. Counters and histograms, not log lines (STYLE.md).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface ServerMetrics {
  registry: Registry;
  liveSessions: Gauge<'route'>;
  timeToFirstAudio: Histogram<'route'>;
  timeToFirstText: Histogram<'route'>;
  firstOutputStages: Histogram<'route' | 'stage'>;
  errors: Counter<'code'>;
  credits: Counter<'kind'>;
  /** Open holds of dead instances this instance's sweep settled (src/server/open-holds.ts). */
  orphanHolds: Counter<'kind'>;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2.5, 5];
/** Stages are shorter than the whole: finer at the bottom. */
const STAGE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2.5, 5];

/** A registry with the server's metrics (and Node's default process metrics when `process` is true). */
export function createMetrics(options: { process?: boolean } = {}): ServerMetrics {
  const registry = new Registry();
  if (options.process) collectDefaultMetrics({ register: registry });
  return {
    registry,
    liveSessions: new Gauge({ name: 'voicewire_live_sessions', help: 'Live sessions per route', labelNames: ['route'], registers: [registry] }),
    timeToFirstAudio: new Histogram({ name: 'voicewire_time_to_first_audio_seconds', help: 'TTS: setup to first audio', labelNames: ['route'], buckets: LATENCY_BUCKETS, registers: [registry] }),
    timeToFirstText: new Histogram({ name: 'voicewire_time_to_first_text_seconds', help: 'STT: setup to first text', labelNames: ['route'], buckets: LATENCY_BUCKETS, registers: [registry] }),
    firstOutputStages: new Histogram({
      name: 'voicewire_first_output_stage_seconds',
      help: 'Time to first output by stage: auth, input (first frame to engine), engine (to its first output), output (to the socket)',
      labelNames: ['route', 'stage'],
      buckets: STAGE_BUCKETS,
      registers: [registry],
    }),
    errors: new Counter({ name: 'voicewire_errors_total', help: 'Errors by code', labelNames: ['code'], registers: [registry] }),
    credits: new Counter({ name: 'voicewire_credits_debited_total', help: 'Credits debited', labelNames: ['kind'], registers: [registry] }),
    orphanHolds: new Counter({ name: 'voicewire_orphan_holds_settled_total', help: 'Open holds of dead instances settled by this instance\'s sweep', labelNames: ['kind'], registers: [registry] }),
  };
}
