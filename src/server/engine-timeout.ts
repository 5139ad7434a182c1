/**
 * A per-call time limit on engines: a call (open, text, pause, flush, end; push) that does not
 * settle within `ms` fails that request with `ENGINE_TIMEOUT` (1011, docs/api.md §7.3), so a hung
 * model cannot hold a session, its credits or a drain forever (issue 16 "Faults"). The runner then
 * closes the stream; a late result of the hung call is ignored.
 */
import { VoicewireError } from '../util/errors.js';
import type { MaybePromise, SttEngine, SttEngineStream, TtsEngine, TtsEngineConfig, TtsEngineEvent, TtsEngineStream } from '../sessions/engine.js';

function timed<T>(what: string, ms: number, call: () => MaybePromise<T>, late?: (value: T) => void): MaybePromise<T> {
  const r = call();
  // Synchronous engines (tone) pay no timer.
  if (!(r instanceof Promise)) return r;
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new VoicewireError('ENGINE_TIMEOUT', `engine ${what} took longer than ${ms / 1000} s`));
    }, ms);
  });
  // A stream that opens after its open timed out is closed at once (nobody else holds it).
  r.then((v) => timedOut && late?.(v), () => undefined);
  return Promise.race([r, limit]).finally(() => clearTimeout(timer));
}

/**
 * A TTS stream whose calls settle within `ms`. A class: an idle request holds its two fields, not
 * five closures (issue 22).
 */
class TimedTtsStream implements TtsEngineStream {
  readonly info: TtsEngineStream['info'];

  constructor(
    private readonly s: TtsEngineStream,
    private readonly ms: number,
  ) {
    this.info = s.info;
  }

  text(text: string): MaybePromise<void> {
    return timed('text', this.ms, () => this.s.text(text));
  }

  pause(seconds: number): MaybePromise<void> {
    return timed('pause', this.ms, () => this.s.pause(seconds));
  }

  flush(): MaybePromise<void> {
    return timed('flush', this.ms, () => this.s.flush());
  }

  end(): MaybePromise<void> {
    return timed('end', this.ms, () => this.s.end());
  }

  close(): void {
    this.s.close();
  }
}

class TimedTtsEngine implements TtsEngine {
  constructor(
    private readonly inner: TtsEngine,
    private readonly ms: number,
  ) {}

  async open(config: TtsEngineConfig, emit: (event: TtsEngineEvent) => void): Promise<TtsEngineStream> {
    const s = await timed('open', this.ms, () => this.inner.open(config, emit), (late) => late.close());
    return new TimedTtsStream(s, this.ms);
  }
}

/** Wraps a TTS engine so each call settles within `ms`. */
export function timedTtsEngine(inner: TtsEngine, ms: number): TtsEngine {
  return new TimedTtsEngine(inner, ms);
}

/** Wraps an STT engine so each call settles within `ms`. */
export function timedSttEngine(inner: SttEngine, ms: number): SttEngine {
  return {
    async open(config, emit) {
      const s = await timed('open', ms, () => inner.open(config, emit), (late) => late.close());
      const stream: SttEngineStream = { info: s.info, push: (frame, audioSamples) => timed('push', ms, () => s.push(frame, audioSamples)), close: () => s.close() };
      if (s.end) stream.end = () => timed('end', ms, () => s.end!());
      return stream;
    },
  };
}
