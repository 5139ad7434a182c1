/**
 * Keeps the first {@link VoicewireError} an engine throws. The session runners report an engine's
 * failure as an `error` message (code and text only), so a one-shot route that must answer with a
 * status per cause (credits → 429, an unknown voice → 400) reads the original error here.
 */
import { isVoicewireError, type VoicewireError } from '../../../util/errors.js';
import type { MaybePromise, SttEngine, SttEngineStream, TtsEngine, TtsEngineStream } from '../../../sessions/engine.js';
import type { SttInputDecoder } from '../../../sessions/server.js';

/** Where the first engine error is kept. */
export interface ErrorBox {
  error?: VoicewireError;
}

function guarded<T>(box: ErrorBox, f: () => MaybePromise<T>): MaybePromise<T> {
  const keep = (err: unknown): never => {
    if (box.error === undefined && isVoicewireError(err)) box.error = err;
    throw err;
  };
  try {
    const r = f();
    return r instanceof Promise ? r.catch(keep) : r;
  } catch (err) {
    return keep(err);
  }
}

/** A TTS engine that records in `box` the first VoicewireError its `open` or stream methods throw. */
export function capturingTtsEngine(inner: TtsEngine, box: ErrorBox): TtsEngine {
  return {
    open: (config, emit) =>
      guarded(box, async () => {
        const s = await inner.open(config, emit);
        const stream: TtsEngineStream = {
          info: s.info,
          text: (t) => guarded(box, () => s.text(t)),
          pause: (sec) => guarded(box, () => s.pause(sec)),
          flush: () => guarded(box, () => s.flush()),
          end: () => guarded(box, () => s.end()),
          close: () => s.close(),
        };
        return stream;
      }),
  };
}

/** An STT engine that records in `box` the first VoicewireError its `open` or stream methods throw. */
export function capturingSttEngine(inner: SttEngine, box: ErrorBox): SttEngine {
  return {
    open: (config, emit) =>
      guarded(box, async () => {
        const s = await inner.open(config, emit);
        const stream: SttEngineStream = { info: s.info, push: (f, audioSamples) => guarded(box, () => s.push(f, audioSamples)), close: () => s.close() };
        if (s.end) stream.end = () => guarded(box, () => s.end!());
        return stream;
      }),
  };
}

/**
 * An input decoder that records in `box` the first VoicewireError it throws: the runner reports
 * it as an `error` line (text only), and a limit (`AUDIO_LIMIT_EXCEEDED`) must reach the client as
 * itself, not as the exit of the ffmpeg whose output stopped being read (issue 31 §5).
 */
export function capturingInputDecoder(decoder: SttInputDecoder, box: ErrorBox): SttInputDecoder {
  const kept = <A extends unknown[], R>(f: (...args: A) => R) => (...args: A): R => {
    try {
      return f.apply(decoder, args);
    } catch (err) {
      if (box.error === undefined && isVoicewireError(err)) box.error = err;
      throw err;
    }
  };
  const out: SttInputDecoder = {
    push: kept(decoder.push),
    get pending() {
      return decoder.pending ?? 0;
    },
  };
  if (decoder.pull) out.pull = kept(decoder.pull);
  if (decoder.drain) out.drain = kept(decoder.drain);
  if (decoder.end) out.end = kept(decoder.end);
  return out;
}
