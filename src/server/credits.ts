/**
 * Credits (service-api.md §2.5): TTS debits `rates.ttsPerChar` per character of text handed to the
 * engine (tags excluded), STT `rates.sttPerSecond` per started second of audio processed. Debits go
 * through `store.debitCredits` (atomic: never below zero, never twice) before the engine works, so
 * a refused debit spends nothing and produces no audio/text: `CREDITS_EXHAUSTED` (code 1008).
 * The same wrappers enforce the per-request limits (text characters) that count what engines see.
 */
import { VoicewireError } from '../util/errors.js';
import type { SttEngine, SttEngineStream, TtsEngine, TtsEngineStream } from '../sessions/engine.js';
import type { Principal } from './auth.js';
import type { ServerContext } from './context.js';

async function debit(ctx: ServerContext, who: Principal, kind: 'tts' | 'stt', units: number, credits: number): Promise<void> {
  if (credits <= 0) return;
  const left = await ctx.store.debitCredits(who.org.id, credits, { keyId: who.key.id, kind, units });
  if (left === null) {
    ctx.metrics.errors.inc({ code: 'CREDITS_EXHAUSTED' });
    throw new VoicewireError('CREDITS_EXHAUSTED', `not enough credits left for organization ${who.org.name} (${kind}: ${credits} needed)`);
  }
  ctx.metrics.credits.inc({ kind }, credits);
}

/** A TTS engine that debits characters and checks the text limit before each piece of text. */
export function meteredTtsEngine(ctx: ServerContext, who: Principal, inner: TtsEngine): TtsEngine {
  return {
    async open(config, emit) {
      const stream = await inner.open(config, emit);
      let chars = 0;
      const metered: TtsEngineStream = {
        info: stream.info,
        async text(text) {
          const n = [...text].length;
          chars += n;
          if (chars > ctx.config.limits.maxTextChars) {
            throw new VoicewireError('LIMIT_EXCEEDED', `text is over the limit of ${ctx.config.limits.maxTextChars} characters per request`);
          }
          await debit(ctx, who, 'tts', n, Math.ceil(n * ctx.config.rates.ttsPerChar));
          return stream.text(text);
        },
        pause: (s) => stream.pause(s),
        flush: () => stream.flush(),
        end: () => stream.end(),
        close: () => stream.close(),
      };
      return metered;
    },
  };
}

/** An STT engine that debits each started second of audio before the frame that starts it. */
export function meteredSttEngine(ctx: ServerContext, who: Principal, inner: SttEngine): SttEngine {
  return {
    async open(config, emit) {
      const stream = await inner.open(config, emit);
      const rate = stream.info.sampleRate ?? 24000;
      let samples = 0;
      let paid = 0;
      const metered: SttEngineStream = {
        info: stream.info,
        async push(frame) {
          const second = Math.floor(samples / rate) + 1;
          samples += frame.length;
          if (second > paid) {
            await debit(ctx, who, 'stt', second - paid, Math.ceil((second - paid) * ctx.config.rates.sttPerSecond));
            paid = second;
          }
          return stream.push(frame);
        },
        close: () => stream.close(),
      };
      if (stream.end) metered.end = () => stream.end!();
      return metered;
    },
  };
}
