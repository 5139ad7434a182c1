/**
 * The audio timeline of a Realtime session: the client's (milliseconds of audio it appended, what
 * `audio_start_ms` / `audio_end_ms` count) and the engine's (what the STT `step` messages count,
 * `total_duration_s`). They differ by the silence the STT runner adds behind each flush (the
 * partial 80 ms frame padded, then `delay_in_frames` silent frames; stt-server-session.ts): each
 * flush is a breakpoint, and engine time inside the added silence maps to the client time of the
 * flush.
 */

/** Engine frame, samples at 24 kHz (§4.4: 80 ms). */
const FRAME_SAMPLES = 1920;
const ENGINE_RATE = 24000;

interface Breakpoint {
  /** Engine time where the flush's silence starts, s. */
  engineS: number;
  /** Engine time where it ends (real audio resumes), s. */
  resumeS: number;
  /** Client time of the flush, ms. */
  clientMs: number;
}

/** Maps engine time to the client's audio timeline. */
export class RealtimeTimeline {
  /** Client audio appended, in client samples. */
  private clientSamples = 0;
  /** Engine samples (24 kHz) of real audio since the last flush. */
  private sinceFlush = 0;
  /** Breakpoints not yet passed by the steps read (the first is the one in force). */
  private readonly points: Breakpoint[] = [{ engineS: 0, resumeS: 0, clientMs: 0 }];

  /** @param sampleRate the client format's rate (24000 for `audio/pcm`, 8000 for G.711). */
  constructor(private readonly sampleRate: number) {}

  /** Client audio so far, ms. */
  get clientMs(): number {
    return (this.clientSamples * 1000) / this.sampleRate;
  }

  /** `samples` client samples were appended. */
  appended(samples: number): void {
    this.clientSamples += samples;
    this.sinceFlush += (samples * ENGINE_RATE) / this.sampleRate;
  }

  /** A flush was sent: the engine gets the padded frame and `delayFrames` silent frames. */
  flushed(delayFrames: number): void {
    const last = this.points[this.points.length - 1]!;
    const real = this.sinceFlush / ENGINE_RATE;
    const padded = (Math.ceil(Math.round(this.sinceFlush) / FRAME_SAMPLES) * FRAME_SAMPLES) / ENGINE_RATE;
    const engineS = last.resumeS + real;
    this.points.push({ engineS, resumeS: last.resumeS + padded + (delayFrames * FRAME_SAMPLES) / ENGINE_RATE, clientMs: this.clientMs });
    this.sinceFlush = 0;
  }

  /**
   * The client time (ms) of engine time `engineS`, and whether it falls in silence the server
   * added. Calls must come in non-decreasing `engineS` (steps do): passed breakpoints are dropped.
   */
  clientTimeOf(engineS: number): { ms: number; added: boolean } {
    while (this.points.length > 1 && this.points[1]!.engineS <= engineS) this.points.shift();
    const p = this.points[0]!;
    if (engineS < p.resumeS) return { ms: p.clientMs, added: true };
    return { ms: p.clientMs + (engineS - p.resumeS) * 1000, added: false };
  }
}
