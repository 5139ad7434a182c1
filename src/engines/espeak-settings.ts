/**
 * The voice and parameters an espeak-ng worker handle collects for its next synthesis, shared by
 * both builds (espeak-module.ts, espeak-system.ts). The engine sets them, then synthesizes, in one
 * synchronous run: a handle reads them when the synthesis is queued, so streams sharing a worker
 * never mix theirs.
 */
export abstract class EspeakSettings {
  /** What the next synthesis queued uses (espeak-ng's defaults: en-us, 175 wpm, pitch and range 50). */
  protected readonly settings = { voice: 'en-us', rate: 175, pitch: 50, range: 50 };

  set_voice(name: string): number {
    this.settings.voice = name;
    return 0;
  }
  set_rate(wpm: number): void {
    this.settings.rate = wpm;
  }
  set_pitch(pitch: number): void {
    this.settings.pitch = pitch;
  }
  set_range(range: number): void {
    this.settings.range = range;
  }
}
