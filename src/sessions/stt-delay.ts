/**
 * The delay an STT request asks for (`json_config.delay_in_frames`, docs/api.md §4.4 `ready`'s
 * "Model delay in 80 ms frames"; protocol-notes.md "STT"). An engine's text for a frame comes out
 * `info.delayInFrames` (its own delay, M) frames later. A request asking for D frames gets:
 *
 * - an engine that can set its delay itself (pocketsphinx: how long a word must hold) does, from
 *   `config.jsonConfig.delay_in_frames`, and reports it;
 * - when the engine's delay is still below D, its `text` and `end_text` are held D − M frames more:
 *   an event the engine gave while it took frame k goes out with frame k + D − M, just before
 *   that frame's `step`, as if the model had said it then; what is held when the stream ends goes
 *   out at the end;
 * - `ready` and the runner see `max(D, M)`: the runner pushes that many silent frames behind a
 *   flush and at the end (§4.4 "Feeding delay_in_frames chunks of silence"), so every held event
 *   is out before `flushed`. An engine slower than D (none of voicewire's: their delays are 1 to
 *   10 frames, the smallest value asked for is 7) keeps its own delay: the API's word for the
 *   delay is the model's.
 */
import type { SttEngine, SttEngineEvent, SttEngineStream } from './engine.js';
import { Fifo } from './fifo.js';
import { after, mapMaybe } from './maybe-promise.js';

/** Events held back, each with the frame index it goes out with. */
class HeldEvents {
  /** Frames the events are held beyond the engine's delay (0: pass through). */
  extra = 0;
  /** Steps seen so far: the index of the frame the engine is taking. */
  private steps = 0;
  private readonly held = new Fifo<{ due: number; event: SttEngineEvent }>();

  constructor(private readonly emit: (event: SttEngineEvent) => void) {}

  onEvent(event: SttEngineEvent): void {
    if (event.type !== 'step') {
      if (this.extra === 0 && this.held.length === 0) this.emit(event);
      else this.held.push({ due: this.steps + this.extra, event });
      return;
    }
    this.release(this.steps);
    this.steps++;
    this.emit(event);
  }

  /** Sends the events due by frame `frame` (all of them with `Infinity`); the queue is in due order. */
  release(frame: number): void {
    for (let head = this.held.peek(); head !== undefined && head.due <= frame; head = this.held.peek()) {
      this.held.shift();
      this.emit(head.event);
    }
  }
}

/**
 * `inner` at the delay each request asks for (`config.jsonConfig.delay_in_frames`; without it, the
 * engine's own): see the module comment. Streams of `inner` whose delay already is the one asked
 * for are handed out as they are.
 */
export function delayedSttEngine(inner: SttEngine): SttEngine {
  return {
    open(config, emit) {
      const asked = config.jsonConfig.delay_in_frames;
      if (asked === undefined) return inner.open(config, emit);
      const held = new HeldEvents(emit);
      return mapMaybe(inner.open(config, (event) => held.onEvent(event)), (stream) => {
        const own = stream.info.delayInFrames;
        if (own >= asked) return stream;
        held.extra = asked - own;
        return heldStream(stream, held, asked);
      });
    },
  };
}

function heldStream(stream: SttEngineStream, held: HeldEvents, delay: number): SttEngineStream {
  const out: SttEngineStream = {
    info: { ...stream.info, delayInFrames: delay },
    push: (frame, audioSamples) => stream.push(frame, audioSamples),
    end: () => after(stream.end?.(), () => held.release(Infinity)),
    close: () => stream.close(),
  };
  return out;
}
