/**
 * The STT server session runner (§3): decodes each request's `input_format` to 24 kHz PCM, frames
 * it for the engine, pushes silence behind a flush and at the end so the last words come out, and
 * reports the engine's events to the STT machine. Each request gets the delay its
 * `json_config.delay_in_frames` asks for (stt-delay.ts); the silence the runner adds is pushed as
 * such (`audioSamples`), so a billing engine counts the client's audio only.
 */
import { objectArg } from '../util/args.js';
import type { AudioFormatName } from '../audio/format.js';
import { bytesOf, int16View } from '../util/bytes.js';
import { createSttInputDecoder } from '../pipelines/stt-audio-decoder.js';
import { createFramer, type Framer } from '../audio/framer.js';
import { serializeSttServerMessage } from '../protocol/parse.js';
import type { MaybePromise, SttEngine, SttEngineStream } from './engine.js';
import { after, sequence } from './maybe-promise.js';
import { delayedSttEngine } from './stt-delay.js';
import { createServerSessionMachine } from './multiplex.js';
import { clientFault, Runner } from './server-runner.js';
import type { ServerSession, ServerSessionOptions } from './server-session.js';
import { sttServerMachine, sttServerRequestMachine, type SttEngineOp, type SttServerEffect, type SttServerEvent, type SttServerState } from './stt-session.js';
import type { TaskQueue } from './task-queue.js';

/**
 * Turns bytes of an STT `input_format` into 24 kHz s16 mono PCM (the engine's input). Chunks in,
 * PCM out, any lengths. The default is the audio pipeline's decoder for every §4.4 format.
 */
export interface SttInputDecoder {
  push(bytes: Uint8Array): Uint8Array | Int16Array;
  /**
   * Samples still queued after `push` (a decoder that bounds its output per call, e.g. Ogg Opus at
   * 1 s per push against decompression bombs, issue 11 §4). Optional, with {@link pull}.
   */
  readonly pending?: number;
  /** The next bounded piece of the queued samples. Optional. */
  pull?(): Uint8Array | Int16Array;
  /** Hand out samples held back without ending the stream (a flush). Optional. */
  drain?(): Uint8Array | Int16Array;
  /** End of input: the rest. Optional. */
  end?(): Uint8Array | Int16Array;
}

/** Options of {@link createSttServerSession}. */
export interface SttServerSessionOptions extends ServerSessionOptions {
  engine: SttEngine;
  /**
   * Decoder factory for the setup's `input_format` (called when a request opens). Throw a
   * VoicewireError (e.g. `PROTOCOL_INVALID_AUDIO_FORMAT`) for formats the server does not take;
   * the client then gets `error` 1008. Default: {@link defaultSttInputDecoder}.
   */
  createInputDecoder?: (format: AudioFormatName) => SttInputDecoder;
}

/**
 * The default STT input decoder: the audio pipeline's {@link createSttInputDecoder} for every
 * input format of §4.4 (pcm, pcm_N, wav, opus, ulaw_8000, alaw_8000) → 24 kHz s16 mono.
 */
export function defaultSttInputDecoder(format: AudioFormatName): SttInputDecoder {
  return createSttInputDecoder(format);
}

/** A frame to push and how many of its samples are the client's audio (the rest is padding). */
interface TailFrame {
  frame: Int16Array;
  audioSamples: number;
}

interface SttDriver {
  queue: TaskQueue;
  closed: boolean;
  stream: SttEngineStream | null;
  decoder: SttInputDecoder | null;
  framer: Framer | null;
  silence: Int16Array | null;
}

class SttServerRunner extends Runner<SttServerState, SttServerEvent, SttServerEffect, SttDriver> {
  protected readonly route = 'STT';
  /** The engine at each request's `delay_in_frames` (stt-delay.ts). */
  private readonly engine: SttEngine;

  constructor(private readonly stt: SttServerSessionOptions) {
    super(stt?.maxRequests === undefined ? sttServerMachine : createServerSessionMachine(sttServerRequestMachine, { maxRequests: stt.maxRequests }), stt);
    this.engine = delayedSttEngine(stt.engine);
  }

  protected serialize(message: unknown): string {
    return serializeSttServerMessage(message as never);
  }

  protected executeOther(effect: SttServerEffect): void {
    if (effect.type !== 'engine') return;
    const { key, stream } = effect;
    this.engineEffect(
      key,
      stream,
      effect.op,
      (queue) => ({ queue, closed: false, stream: null, decoder: null, framer: null, silence: null }),
      (d, op) => this.runOp(d, key, stream, op),
    );
  }

  /** Frames `pcm` (the client's audio) and pushes the whole frames, then the `tail` frames (padding). */
  private pushPcm(d: SttDriver, pcm: Uint8Array | Int16Array, tail: readonly TailFrame[] = []): MaybePromise<void> {
    const bytes = pcm instanceof Int16Array ? bytesOf(pcm) : pcm;
    const frames: TailFrame[] = [];
    for (const f of d.framer!.push(bytes)) {
      const frame = int16View(f);
      frames.push({ frame, audioSamples: frame.length });
    }
    for (const f of tail) frames.push(f);
    const s = d.stream!;
    return sequence(frames, (f) => (d.closed ? undefined : s.push(f.frame, f.audioSamples)));
  }

  private runOp(d: SttDriver, key: string | null, stream: number, op: Exclude<SttEngineOp, { op: 'close' }>): MaybePromise<void> {
    switch (op.op) {
      case 'open': {
        try {
          d.decoder = (this.stt.createInputDecoder ?? defaultSttInputDecoder)(op.config.inputFormat);
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', `STT: input_format '${op.config.inputFormat}'`);
        }
        return this.openStream(d, key, stream, (emit) => this.engine.open(op.config, emit), (s) => {
          d.stream = s;
          const frameSize = s.info.frameSize ?? 1920;
          d.framer = createFramer({ frameSamples: frameSize, bytesPerSample: 2, partial: 'pad', sampleRate: s.info.sampleRate ?? 24000 });
          d.silence = new Int16Array(frameSize);
        });
      }
      case 'audio': {
        let pcm: Uint8Array | Int16Array;
        try {
          pcm = d.decoder!.push(op.audio);
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', 'STT: audio could not be decoded');
        }
        return after(this.pushPcm(d, pcm), () => this.pullPending(d));
      }
      case 'flush': {
        // The server pushes silence behind a flush (protocol-notes.md "STT"): the partial frame is
        // padded, then delay_in_frames silent frames carry the text of the audio before the flush out.
        let drained: Uint8Array | Int16Array = new Uint8Array(0);
        try {
          if (d.decoder!.drain) drained = d.decoder!.drain();
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', 'STT: audio could not be decoded');
        }
        const tail = this.tailFrames(d);
        return after(this.pushPcm(d, drained, tail), () => this.report(d, key, stream, { type: 'flush_done', flush_id: op.flush_id }));
      }
      case 'end': {
        let rest: Uint8Array | Int16Array = new Uint8Array(0);
        try {
          if (d.decoder!.end) rest = d.decoder!.end();
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', 'STT: audio could not be decoded');
        }
        const s = d.stream!;
        return after(
          after(this.pushPcm(d, rest), () => this.pushPcm(d, new Uint8Array(0), this.tailFrames(d))),
          () =>
            after(d.closed || !s.end ? undefined : s.end(), () => this.report(d, key, stream, { type: 'ended' })),
        );
      }
    }
  }

  /**
   * Decodes what one message left queued, a bounded piece at a time, each behind the engine and
   * the transport: a small message that decodes to hours (an Ogg Opus bomb) costs the event loop
   * one piece at a time and stops at the decoder's `maxDecodedSeconds`.
   */
  private pullPending(d: SttDriver): MaybePromise<void> {
    const dec = d.decoder!;
    while (dec.pull !== undefined && (dec.pending ?? 0) > 0 && !d.closed) {
      let pcm: Uint8Array | Int16Array;
      try {
        pcm = dec.pull();
      } catch (err) {
        throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', 'STT: audio could not be decoded');
      }
      const waiting = after(this.pushPcm(d, pcm), () => this.gate());
      if (waiting !== undefined) return after(waiting, () => this.pullPending(d));
    }
    return undefined;
  }

  /** The padded partial frame (if any; its client samples counted) and `delayInFrames` silent frames. */
  private tailFrames(d: SttDriver): TailFrame[] {
    const out: TailFrame[] = [];
    const partial = d.framer!.buffered / 2;
    for (const f of d.framer!.flush()) out.push({ frame: int16View(f), audioSamples: partial });
    const delay = d.stream!.info.delayInFrames;
    for (let i = 0; i < delay; i++) out.push({ frame: d.silence!, audioSamples: 0 });
    return out;
  }
}

/**
 * Runs an STT server session over one socket: validates every client message, drives one engine
 * stream per request, answers with `ready`, `text`, `end_text`, `step`, `flushed`,
 * `end_of_stream` and `error`, and closes with the API's codes (§3.2, §7.3).
 */
export function createSttServerSession(options: SttServerSessionOptions): ServerSession<SttServerState> {
  objectArg(options, 'createSttServerSession: options');
  objectArg(options.engine, 'createSttServerSession: options.engine');
  return new SttServerRunner(options);
}
