/**
 * The budget of upload bytes a server holds in memory (issue 31 §3): a `/v1/audio/transcriptions`
 * file is held whole while it is transcribed, so every byte held counts against a limit for the
 * process (`limits.uploadBytes`) and a share per API key (`limits.uploadBytesPerKey`). Bytes are
 * counted as they arrive, not as declared (a client that declares 50 MiB and sends nothing holds
 * nothing), and an upload that would pass either limit is refused at that chunk: past the key's
 * share `LIMIT_EXCEEDED` (429 on `/v1`), past the process's `ENGINE_BUSY` (503: the server is
 * busy, retry later). What a request held goes back when it ends, whichever way it ends.
 */
import { VoicewireError } from '../util/errors.js';

/** Bytes held by one request; {@link release} gives them all back (idempotent). */
export interface UploadLease {
  /**
   * Counts `bytes` more.
   * @throws VoicewireError `LIMIT_EXCEEDED` past the key's share, `ENGINE_BUSY` past the process's
   *   budget; nothing of this call is counted then.
   */
  add(bytes: number): void;
  /** Bytes this request holds. */
  readonly bytes: number;
  /** Gives every byte back; later `add` calls refuse. */
  release(): void;
}

/** Upload bytes held in memory: per process and per API key. */
export class UploadBudget {
  private held = 0;
  private readonly perKey = new Map<string, number>();

  /** `limit`: bytes for the process; `perKeyLimit`: bytes one API key may hold of it. */
  constructor(
    readonly limit: number,
    readonly perKeyLimit: number,
  ) {}

  /** Bytes held now, by every request. */
  get bytes(): number {
    return this.held;
  }

  /** Bytes held now by `keyId`'s requests. */
  bytesOf(keyId: string): number {
    return this.perKey.get(keyId) ?? 0;
  }

  /** A lease for one request of `keyId`. */
  lease(keyId: string): UploadLease {
    let mine = 0;
    let released = false;
    const budget = this;
    return {
      get bytes() {
        return mine;
      },
      add(bytes: number): void {
        if (released) throw new VoicewireError('INVALID_STATE', 'the upload lease was released');
        const keyHeld = budget.bytesOf(keyId);
        if (keyHeld + bytes > budget.perKeyLimit) {
          throw new VoicewireError('LIMIT_EXCEEDED', `this API key's uploads already hold ${keyHeld} bytes in memory (limit limits.uploadBytesPerKey ${budget.perKeyLimit})`);
        }
        if (budget.held + bytes > budget.limit) {
          throw new VoicewireError('ENGINE_BUSY', `the server holds its limit of ${budget.limit} bytes of uploads in memory (limits.uploadBytes): try again later`);
        }
        budget.held += bytes;
        budget.perKey.set(keyId, keyHeld + bytes);
        mine += bytes;
      },
      release(): void {
        if (released) return;
        released = true;
        budget.held -= mine;
        const left = budget.bytesOf(keyId) - mine;
        if (left <= 0) budget.perKey.delete(keyId);
        else budget.perKey.set(keyId, left);
        mine = 0;
      },
    };
  }
}
