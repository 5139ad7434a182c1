/**
 * Engine samples (48 kHz s16 mono) packed into whole 80 ms frames, the unit a TTS engine emits
 * (docs/api.md §2.3). Shared by the engines that synthesize in pieces of their own length
 * (espeak-ng, sherpa-onnx); each frame is a new array, so a receiver may keep it.
 */
export const ENGINE_FRAME = 3840;

export class FramePacker {
  private frame = new Int16Array(ENGINE_FRAME);
  /** Samples in the frame being filled. */
  fill = 0;
  /** Samples taken so far, emitted or in the frame being filled (the timeline of word timestamps). */
  out = 0;

  constructor(private readonly emitFrame: (pcm: Int16Array) => void) {}

  /** Room left in the frame being filled. */
  get room(): number {
    return ENGINE_FRAME - this.fill;
  }

  /** Appends samples to the frame being filled; emits each full frame. */
  push(samples: Int16Array): void {
    let s = 0;
    while (s < samples.length) {
      const n = Math.min(ENGINE_FRAME - this.fill, samples.length - s);
      this.frame.set(samples.subarray(s, s + n), this.fill);
      this.fill += n;
      this.out += n;
      s += n;
      if (this.fill === ENGINE_FRAME) {
        this.emitFrame(this.frame);
        this.frame = new Int16Array(ENGINE_FRAME);
        this.fill = 0;
      }
    }
  }

  /** Completes the frame being filled with silence, so everything said so far leaves. */
  pad(): void {
    if (this.fill > 0) this.push(new Int16Array(ENGINE_FRAME - this.fill));
  }
}
