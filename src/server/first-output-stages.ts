/**
 * Where a session's time to first output goes, stage by stage (the guide: every stage reports
 * the delay it adds). For the first request of a WebSocket session:
 *
 * - `auth`: the upgrade until the session is attached (key lookup, session count);
 * - `input`: the first frame until the engine is first asked for work (parse, validation,
 *   text chunking, the runner's queue, `open`);
 * - `engine`: that call until the engine's first output (TTS audio, STT text);
 * - `output`: that output until its message is handed to the socket (resampling, encoding,
 *   serialization, the runner's queue).
 *
 * input + engine + output is the time-to-first-output histogram's span; each is observed once
 * per session in `voicewire_first_output_stage_seconds{route, stage}`.
 */
import type { MaybePromise, SttEngine, SttEngineStream, TtsEngine, TtsEngineConfig, TtsEngineEvent, TtsEngineStream } from '../sessions/engine.js';

export type FirstOutputStage = 'auth' | 'input' | 'engine' | 'output';

export class FirstOutputStages {
  private frameAt = 0;
  private engineAt = 0;
  private outputAt = 0;
  private done = false;

  constructor(private readonly observe: (stage: FirstOutputStage, seconds: number) => void) {}

  /** The session was attached `ms` after the upgrade. */
  authenticated(ms: number): void {
    this.observe('auth', ms / 1000);
  }

  /** A frame arrived (only the first counts). */
  frame(): void {
    if (this.frameAt === 0) this.frameAt = performance.now();
  }

  /** The engine was asked for work (only the first call counts). */
  engineAsked(): void {
    if (this.engineAt === 0) this.engineAt = performance.now();
  }

  /** The engine produced output (only the first, and only once it was asked). */
  engineOutput(): void {
    if (this.outputAt === 0 && this.engineAt !== 0) this.outputAt = performance.now();
  }

  /** The first output message went to the socket: the three stages are observed. */
  sent(): void {
    if (this.done || this.frameAt === 0 || this.engineAt === 0 || this.outputAt === 0) return;
    this.done = true;
    const now = performance.now();
    this.observe('input', (this.engineAt - this.frameAt) / 1000);
    this.observe('engine', (this.outputAt - this.engineAt) / 1000);
    this.observe('output', (now - this.outputAt) / 1000);
  }
}

/** A TTS stream that tells `stages` when it is first asked for audio. A class: an idle request holds two fields, not closures (issue 22). */
class StagedTtsStream implements TtsEngineStream {
  readonly info: TtsEngineStream['info'];

  constructor(
    private readonly s: TtsEngineStream,
    private readonly stages: FirstOutputStages,
  ) {
    this.info = s.info;
  }

  text(text: string): MaybePromise<void> {
    this.stages.engineAsked();
    return this.s.text(text);
  }

  pause(seconds: number): MaybePromise<void> {
    this.stages.engineAsked();
    return this.s.pause(seconds);
  }

  flush(): MaybePromise<void> {
    this.stages.engineAsked();
    return this.s.flush();
  }

  end(): MaybePromise<void> {
    this.stages.engineAsked();
    return this.s.end();
  }

  close(): void {
    this.s.close();
  }
}

class StagedTtsEngine implements TtsEngine {
  constructor(
    private readonly inner: TtsEngine,
    private readonly stages: FirstOutputStages,
  ) {}

  async open(config: TtsEngineConfig, emit: (event: TtsEngineEvent) => void): Promise<TtsEngineStream> {
    const stages = this.stages;
    const s = await this.inner.open(config, (event) => {
      if (event.type === 'audio') stages.engineOutput();
      emit(event);
    });
    return new StagedTtsStream(s, stages);
  }
}

/** A TTS engine whose streams tell `stages` when they are first asked for audio and first give it. */
export function stagedTtsEngine(inner: TtsEngine, stages: FirstOutputStages): TtsEngine {
  return new StagedTtsEngine(inner, stages);
}

/** An STT engine whose streams tell `stages` when they first get audio and first give text. */
export function stagedSttEngine(inner: SttEngine, stages: FirstOutputStages): SttEngine {
  return {
    async open(config, emit) {
      const s = await inner.open(config, (event) => {
        if (event.type === 'text') stages.engineOutput();
        emit(event);
      });
      const stream: SttEngineStream = {
        info: s.info,
        push: (frame, audioSamples) => {
          stages.engineAsked();
          return s.push(frame, audioSamples);
        },
        close: () => s.close(),
      };
      if (s.end) stream.end = () => s.end!();
      return stream;
    },
  };
}
