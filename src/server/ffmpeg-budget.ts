/**
 * The budget of live ffmpeg children (issue 31 §6): each `/v1` request that encodes (mp3, flac,
 * aac out) or decodes (a non-WAV, non-Ogg-Opus file in) runs an ffmpeg, ~50 MB of resident memory
 * and a core while it works. The server holds at most `limits.ffmpegChildren` of them, one API key
 * at most `limits.ffmpegChildrenPerKey`: one more is `ENGINE_BUSY` (503 on `/v1`: the server is
 * busy) or `LIMIT_EXCEEDED` (429) for that request, before anything is spawned. A slot is given
 * back when its child has exited (not when it was told to stop: a killed child lives until reaped).
 */
import { EngineBudget, KeyedBudget } from '../engines/budget.js';

/** What {@link FfmpegBudget.start} runs: anything that reports its child's exit. */
export interface FfmpegChild {
  /** Settles (either way) once the child has exited. */
  readonly exited: Promise<unknown>;
}

/** Live ffmpeg (and ffprobe) children of one server: per process and per API key. */
export class FfmpegBudget {
  private readonly all: EngineBudget;
  private readonly perKey: KeyedBudget;

  constructor(limit: number, perKeyLimit: number) {
    this.all = new EngineBudget('ffmpeg children', limit, { limitName: 'limits.ffmpegChildren' });
    this.perKey = new KeyedBudget('live ffmpeg children', perKeyLimit, 'limits.ffmpegChildrenPerKey');
  }

  /** Children live now. */
  get live(): number {
    return this.all.live;
  }

  /**
   * Takes a slot of the process and of `keyId`, then `spawn`s; the slots go back when the child has
   * exited (or at once when `spawn` throws).
   * @throws VoicewireError `LIMIT_EXCEEDED` past the key's share, `ENGINE_BUSY` past the process's budget.
   */
  start<C extends FfmpegChild>(keyId: string, spawn: () => C): C {
    const release = this.take(keyId);
    try {
      const child = spawn();
      void child.exited.then(release, release);
      return child;
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Runs `task` (which starts a child and waits for its end, as ffprobe does) within a slot. */
  async run<T>(keyId: string, task: () => Promise<T>): Promise<T> {
    const release = this.take(keyId);
    try {
      return await task();
    } finally {
      release();
    }
  }

  private take(keyId: string): () => void {
    const key = this.perKey.acquire(keyId, 'this API key');
    try {
      const one = this.all.acquire();
      return () => {
        one();
        key();
      };
    } catch (err) {
      key();
      throw err;
    }
  }
}
