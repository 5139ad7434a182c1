/**
 * Audio between LiveKit's `AudioFrame` (16-bit, interleaved, any rate) and the service's PCM
 * (s16le mono): frames in go down to mono and through voicewire's own streaming resampler to the
 * rate the STT route takes (24 kHz `pcm`, docs/api.md §4.4); audio out becomes frames as it comes.
 */
import type { AudioFrame } from '@livekit/rtc-node';
import { downmixInt16ToMono } from '../audio/pcm.js';
import { createInt16Resampler, type Resampler } from '../audio/resampler.js';
import { int16View } from '../util/bytes.js';
import { rtc } from './agents.js';

/** The STT route's PCM rate (`input_format: 'pcm'`, §4.4). */
export const STT_SAMPLE_RATE = 24000;

/** Little-endian bytes of an Int16Array (the platforms voicewire runs on are little-endian). */
function bytesOf(samples: Int16Array): Uint8Array {
  return new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
}

/**
 * Frames at any rate and channel count → 24 kHz mono s16le bytes. One resampler per input rate
 * (LiveKit's own SpeechStream makes one the same way); a rate change flushes the old one first,
 * so no audio is lost or reordered.
 */
export class FrameResampler {
  private resampler: Resampler<Int16Array> | undefined;

  constructor(private readonly to = STT_SAMPLE_RATE) {}

  /** The PCM bytes this frame completes (may be empty while the resampler fills). */
  push(frame: AudioFrame): Uint8Array[] {
    const out: Uint8Array[] = [];
    const mono = frame.channels > 1 ? downmixInt16ToMono(frame.data.subarray(0, frame.samplesPerChannel * frame.channels), frame.channels) : frame.data.subarray(0, frame.samplesPerChannel);
    if (frame.sampleRate === this.to) {
      out.push(...this.flush());
      // A copy: the caller may reuse the frame's buffer once pushFrame returns.
      out.push(bytesOf(mono.slice()));
      return out;
    }
    if (this.resampler !== undefined && this.resampler.from !== frame.sampleRate) out.push(...this.flush());
    this.resampler ??= createInt16Resampler({ from: frame.sampleRate, to: this.to });
    const samples = this.resampler.push(mono);
    if (samples.length > 0) out.push(bytesOf(samples));
    return out;
  }

  /** The resampler's tail (end of the input, or before a flush): what it still held. */
  flush(): Uint8Array[] {
    const r = this.resampler;
    this.resampler = undefined;
    if (r === undefined) return [];
    const tail = r.flush();
    return tail.length > 0 ? [bytesOf(tail)] : [];
  }
}

/** PCM bytes from the service → AudioFrames, keeping an odd trailing byte for the next chunk. */
export class PcmFramer {
  private carry: number | undefined;

  constructor(private readonly sampleRate: number) {}

  /** One frame for the whole samples of `bytes` (undefined when there are none). */
  push(bytes: Uint8Array): AudioFrame | undefined {
    let data = bytes;
    if (this.carry !== undefined) {
      data = new Uint8Array(bytes.length + 1);
      data[0] = this.carry;
      data.set(bytes, 1);
      this.carry = undefined;
    }
    if (data.length % 2 === 1) {
      this.carry = data[data.length - 1]!;
      data = data.subarray(0, data.length - 1);
    }
    if (data.length === 0) return undefined;
    // int16View copies when the offset is odd; slice() so the frame owns its samples.
    const samples = int16View(data).slice();
    return new rtc.AudioFrame(samples, this.sampleRate, 1, samples.length);
  }
}
