/**
 * The Ogg container (RFC 3533), platform-neutral: an incremental page reader with capture-pattern
 * resync and CRC check, a packet reader that reassembles packets across pages for the logical
 * streams it follows, and a page writer with lacing, sequence numbers and granule positions.
 *
 * Page layout (RFC 3533 §6), little-endian fields:
 * ```
 *  0 "OggS"  4 version(0)  5 header type  6 granule (int64)  14 serial (u32)  18 sequence (u32)
 * 22 CRC (u32)  26 segment count n  27 lacing values [n]  27+n body [sum of lacing values]
 * ```
 * Header type bits: 0x01 continued packet, 0x02 beginning of stream (BOS), 0x04 end of stream (EOS).
 */
import { ByteQueue, concatChunks, describe, toBytes } from '../util/bytes.js';
import { oggCrc32, oggCrc32Prefix, oggCrc32Shift, oggPageCrc } from './crc32.js';
import { VoicewireError, toVoicewireError } from '../util/errors.js';
import { shown } from '../util/args.js';
import type { Incremental } from '../util/stream-core.js';

/** Header type flag: the page starts with the continuation of a packet from the previous page. */
export const OGG_CONTINUED = 0x01;
/** Header type flag: first page of a logical stream. */
export const OGG_BOS = 0x02;
/** Header type flag: last page of a logical stream. */
export const OGG_EOS = 0x04;
/** Size of the fixed page header, before the lacing table. */
export const OGG_HEADER_SIZE = 27;
/** Largest possible page: header, 255 lacing values, 255 × 255 body bytes. */
export const OGG_MAX_PAGE_SIZE = OGG_HEADER_SIZE + 255 + 255 * 255;

/** One Ogg page, as read by {@link OggPageReader}. */
export interface OggPage {
  /** Byte offset of the page's capture pattern in the input stream. */
  readonly offset: number;
  /** Header type byte (see {@link OGG_CONTINUED}, {@link OGG_BOS}, {@link OGG_EOS}). */
  readonly headerType: number;
  /** The first bytes of the body continue a packet begun on an earlier page. */
  readonly continued: boolean;
  /** Beginning of stream. */
  readonly bos: boolean;
  /** End of stream. */
  readonly eos: boolean;
  /** Granule position (signed 64-bit); `-1n` when no packet ends on this page (RFC 3533 §6). */
  readonly granule: bigint;
  /** Bitstream serial number (unsigned 32-bit). */
  readonly serial: number;
  /** Page sequence number (unsigned 32-bit). */
  readonly sequence: number;
  /** The lacing values (a view into {@link bytes}). */
  readonly segments: Uint8Array;
  /** The page body (a view into {@link bytes}). */
  readonly body: Uint8Array;
  /** The whole page, header included: a view of the pushed chunk when the page lay in one chunk. */
  readonly bytes: Uint8Array;
}

/** What an Ogg reader reports without stopping. */
export type OggWarningKind =
  /**
   * Bytes without a valid page were skipped while looking for the capture pattern "OggS": before
   * the first page in any mode, anywhere with `strict: false`.
   */
  | 'garbage'
  /** A page failed its CRC and was skipped (only with `strict: false`). */
  | 'crc-mismatch'
  /** A followed stream's page sequence number jumped: pages were lost (only with `strict: false`). */
  | 'sequence-gap'
  /** A packet could not be completed (lost continuation, page gap) and was dropped. */
  | 'packet-lost'
  /** Pages of a logical stream that is not followed (not selected, no BOS seen, or after EOS). */
  | 'other-stream'
  /** The input ended but a followed stream had no EOS page (only with `allowTruncated`). */
  | 'missing-eos'
  /** The input ended inside a page, which was dropped (only with `allowTruncated`). */
  | 'truncated'
  /** A codec-level layout problem that the decoder tolerated (e.g. a granule position inconsistent with the packets). */
  | 'layout';

/** A non-fatal problem found while reading. */
export interface OggWarning {
  readonly kind: OggWarningKind;
  readonly message: string;
  /** Byte offset in the input where the problem was found. */
  readonly offset: number;
  /** Serial number of the logical stream concerned, when there is one. */
  readonly serial?: number;
}

/** Options of {@link OggPageReader}. */
export interface OggPageReaderOptions {
  /**
   * Damage is an error (default true). Strict: a page failing its CRC raises `OGG_CRC_MISMATCH`,
   * and once a first valid page was read, any byte that does not begin the next page (a damaged
   * capture pattern or version byte, junk between or after pages) raises `OGG_CORRUPT`; the
   * {@link OggPacketReader} also raises `OGG_SEQUENCE_GAP` for lost pages. Bytes before the first
   * page are skipped in both modes (reported as `garbage`). `false`: lenient, as a player is:
   * bad pages and junk are skipped with `crc-mismatch`/`garbage` warnings, resynchronising on the
   * next capture pattern, and sequence gaps are warnings.
   */
  strict?: boolean;
  /**
   * Accept input that ends early (default false). Without it, {@link OggPageReader.flush} raises
   * `OGG_TRUNCATED` when the input ends inside a page and {@link OggPacketReader.flush} also when
   * a followed stream has no EOS page; with it they report `truncated`/`missing-eos` warnings.
   */
  allowTruncated?: boolean;
  /** Receives non-fatal problems (garbage skipped, and what `strict: false`/`allowTruncated` tolerate). Default: ignore them. */
  onWarning?: (warning: OggWarning) => void;
  /**
   * Most consecutive bytes skipped without finding a valid page before the input is declared not
   * Ogg (`OGG_INVALID_PAGE`). Default 65536 (more than one largest page). `Infinity` disables it.
   */
  maxGarbage?: number;
}

function checkReaderOptions<T extends OggPageReaderOptions>(options: T | null | undefined, what: string): T {
  const o = checkOptions(options, what);
  if (o.onWarning !== undefined && typeof o.onWarning !== 'function') throw new VoicewireError('INVALID_ARGUMENT', `${what} onWarning must be a function, got ${describe(o.onWarning)}`);
  if (o.maxGarbage !== undefined && !(typeof o.maxGarbage === 'number' && o.maxGarbage >= 0 && !Number.isNaN(o.maxGarbage))) {
    throw new VoicewireError('INVALID_ARGUMENT', `${what} maxGarbage must be a non-negative number, got ${shown(o.maxGarbage)}`);
  }
  return o;
}

const S_SYNC = 0;
const S_HEADER = 1;
const S_LACING = 2;
const S_BODY = 3;
const S_FAILED = 4;

/** "OggS", the capture pattern (RFC 3533 §6). */
const CAPTURE = [0x4f, 0x67, 0x67, 0x53] as const;

/** A little-endian u32 of a page header (RFC 3533 §6: every field is little-endian). */
function u32le(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}

/** Eight bytes seen as an int64 of this platform's byte order: the granule without a DataView per page. */
const GRANULE_BYTES = new Uint8Array(8);
const GRANULE = new BigInt64Array(GRANULE_BYTES.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The page's granule position (bytes 6–13, a signed little-endian int64; -1 means none). */
function granuleOf(b: Uint8Array): bigint {
  if (!LITTLE_ENDIAN) return new DataView(b.buffer, b.byteOffset, b.byteLength).getBigInt64(6, true);
  for (let k = 0; k < 8; k++) GRANULE_BYTES[k] = b[6 + k]!;
  return GRANULE[0]!;
}

/**
 * Reads Ogg pages from bytes pushed in chunks of any size (an explicit state machine over a
 * {@link ByteQueue}: `SYNC` → `HEADER` → `LACING` → `BODY`). Every page's CRC is checked
 * (RFC 3533 §6). Bytes before the first capture pattern are skipped and reported as `garbage`.
 *
 * Errors (default, strict): a CRC mismatch (`OGG_CRC_MISMATCH`), bytes after the first page that
 * do not begin a page (`OGG_CORRUPT`: a flipped capture-pattern or version byte is not covered by
 * the CRC check, since the page is then not found at all), too much leading garbage
 * (`OGG_INVALID_PAGE`), and `OGG_TRUNCATED` from {@link flush} when the input ends inside a page.
 * `strict: false` skips bad pages and junk instead; `allowTruncated` accepts the cut.
 * Nothing complete is lost to an error: when a bad page follows good ones in the same chunk,
 * `push` returns the good pages and the error is raised by the next `push` or `flush`.
 * After an error the reader is failed and every call raises `INVALID_STATE`.
 */
export class OggPageReader implements Incremental<Uint8Array, OggPage> {
  private readonly queue = new ByteQueue();
  private readonly strict: boolean;
  private readonly allowTruncated: boolean;
  private readonly onWarning: ((w: OggWarning) => void) | undefined;
  private readonly maxGarbage: number;
  private state = S_SYNC;
  /** A valid page was read: from here on (strict) the next page must follow at once. */
  private synced = false;
  /** Stream offset of the queue's first byte. */
  private position = 0;
  private garbageStart = 0;
  private garbageLength = 0;
  private pageLength = 0;
  private pendingError: VoicewireError | undefined;
  private failure: VoicewireError | undefined;
  // Lenient mode reads from one contiguous window with prefix CRCs, so that checking a candidate
  // page costs O(1) whatever its length: resynchronising on crafted garbage (a false "OggS"
  // every few bytes, each claiming a 64 KB page) stays linear (issue 11 §8: 1 MB took 7.3 s).
  /** Bytes not yet consumed (from `winAt`); pages are views of it (never overwritten: compaction allocates anew). */
  private win = new Uint8Array(0);
  /** `pre[i]` = CRC of `win[0, i)` (no init, no final xor). */
  private pre = new Uint32Array(1);
  private winLength = 0;
  private winAt = 0;

  constructor(options: OggPageReaderOptions = {}) {
    options = checkReaderOptions(options, 'OggPageReader');
    this.strict = options.strict ?? true;
    this.allowTruncated = options.allowTruncated ?? false;
    this.onWarning = options.onWarning;
    this.maxGarbage = options.maxGarbage ?? 65536;
  }

  /** Total bytes consumed so far (the stream offset of the next unread byte). */
  get offset(): number {
    return this.position;
  }

  /** Bytes buffered while waiting for the rest of a page. */
  get buffered(): number {
    return this.strict ? this.queue.length : this.winLength - this.winAt;
  }

  /** Pushes bytes; returns every page completed by them, in order. */
  push(chunk: Uint8Array): OggPage[] {
    this.checkUsable();
    const bytes = toBytes(chunk, 'Ogg input');
    const out: OggPage[] = [];
    try {
      if (this.strict) {
        this.queue.push(bytes);
        this.run(out);
      } else {
        this.append(bytes);
        this.runLenient(out, false);
      }
    } catch (err) {
      return this.fail(err as VoicewireError, out);
    }
    return out;
  }

  /**
   * Ends the input. Returns nothing (pages are emitted as soon as they are complete); raises
   * `OGG_TRUNCATED` when the input ended inside a page (a `truncated` warning with
   * `allowTruncated`). Trailing bytes that cannot begin a page are `OGG_CORRUPT` once a page was
   * read (strict), else reported as `garbage`.
   */
  flush(): OggPage[] {
    this.checkUsable();
    if (!this.strict) return this.flushLenient();
    const left = this.queue.length;
    // Strict and synced, the SYNC state only holds a prefix of "OggS" (anything else has raised):
    // the input was cut inside the next page's capture pattern.
    const cut = this.state !== S_SYNC || (left > 0 && this.strict && this.synced);
    try {
      if (cut) {
        const message = `Ogg input ended inside the page at byte ${this.position} (${left} of ${this.state === S_BODY ? this.pageLength : 'at least 27'} bytes)`;
        if (!this.allowTruncated) throw new VoicewireError('OGG_TRUNCATED', message, { details: { offset: this.position, buffered: left } });
        this.reportGarbage();
        this.onWarning?.({ kind: 'truncated', message, offset: this.position });
      } else {
        if (left > 0) this.skipGarbage(left);
        this.reportGarbage();
      }
    } catch (err) {
      return this.fail(err as VoicewireError, []);
    }
    this.queue.clear();
    this.state = S_FAILED; // used up: a later call reports INVALID_STATE
    return [];
  }

  private checkUsable(): void {
    if (this.pendingError) {
      const err = this.pendingError;
      this.pendingError = undefined;
      throw err;
    }
    if (this.state === S_FAILED) {
      throw new VoicewireError('INVALID_STATE', `OggPageReader cannot be used after ${this.failure ? `an error (${this.failure.code})` : 'flush()'}`, { cause: this.failure });
    }
  }

  private fail(err: VoicewireError, out: OggPage[]): OggPage[] {
    // Only VoicewireErrors are expected here (anything else, e.g. from an onWarning callback,
    // is wrapped with the reader's own code and kept as the cause).
    err = toVoicewireError(err, 'OGG_INVALID_PAGE');
    this.state = S_FAILED;
    this.failure = err;
    this.queue.clear();
    if (out.length === 0) throw err;
    this.pendingError = err; // deliver the complete pages first, raise on the next call
    return out;
  }

  private run(out: OggPage[]): void {
    const q = this.queue;
    for (;;) {
      switch (this.state) {
        case S_SYNC: {
          if (this.strict && this.synced) {
            // The next page must begin right here: a flipped capture-pattern byte would otherwise
            // make the page vanish as garbage, unseen by the CRC check.
            const n = Math.min(4, q.length);
            for (let i = 0; i < n; i++) if (q.peekByte(i) !== CAPTURE[i]) this.corrupt(q.peek(n));
            if (n < 4) return;
            this.state = S_HEADER;
            break;
          }
          // Look for "OggS". Bytes that cannot start it are skipped one by one (garbage is rare;
          // valid input never enters this loop more than once per page).
          while (q.length >= 4) {
            if (q.peekByte(0) === 0x4f && q.peekByte(1) === 0x67 && q.peekByte(2) === 0x67 && q.peekByte(3) === 0x53) break;
            this.skipGarbage(1);
          }
          if (q.length < 4) return;
          this.state = S_HEADER;
          break;
        }
        case S_HEADER: {
          if (q.length < OGG_HEADER_SIZE) return;
          // RFC 3533 §6: stream_structure_version is 0. Anything else is not a page: a capture
          // pattern inside garbage, so resume scanning one byte further.
          if (q.peekByte(4) !== 0) {
            if (this.strict && this.synced) this.corrupt(q.peek(5));
            this.skipGarbage(1);
            this.state = S_SYNC;
            break;
          }
          this.state = S_LACING;
          break;
        }
        case S_LACING: {
          const n = q.peekByte(26);
          if (q.length < OGG_HEADER_SIZE + n) return;
          const lacing = q.peek(OGG_HEADER_SIZE + n);
          let body = 0;
          for (let i = 0; i < n; i++) body += lacing[OGG_HEADER_SIZE + i]!;
          this.pageLength = OGG_HEADER_SIZE + n + body;
          this.state = S_BODY;
          break;
        }
        case S_BODY: {
          if (q.length < this.pageLength) return;
          const bytes = q.peek(this.pageLength);
          const page = this.checkPage(bytes);
          if (page === undefined) {
            // CRC mismatch in skip mode: the capture pattern may have been a false one, so resume
            // the scan right after it.
            this.skipGarbage(1);
            this.state = S_SYNC;
            break;
          }
          this.reportGarbage();
          q.skip(this.pageLength);
          this.position += this.pageLength;
          this.state = S_SYNC;
          this.synced = true;
          out.push(page);
          break;
        }
        default:
          return;
      }
    }
  }


  // --- lenient mode -------------------------------------------------------------------------------

  /** Appends bytes to the window (compacting it into a new buffer when full) and extends the prefix CRCs. */
  private append(bytes: Uint8Array): void {
    const n = bytes.length;
    if (n === 0) return;
    if (this.winLength + n > this.win.length) {
      const keep = this.winLength - this.winAt;
      const size = Math.max(2 * (keep + n), 65536);
      const win = new Uint8Array(size);
      win.set(this.win.subarray(this.winAt, this.winLength));
      const pre = new Uint32Array(size + 1);
      oggCrc32Prefix(win, pre, 0, keep);
      this.win = win;
      this.pre = pre;
      this.winLength = keep;
      this.winAt = 0;
    }
    const at = this.winLength;
    this.win.set(bytes, at);
    oggCrc32Prefix(this.win, this.pre, at, at + n);
    this.winLength = at + n;
  }

  /** The CRC of the page at `win[i, i + length)` with its CRC field zeroed (RFC 3533 §6), in O(log length). */
  private windowCrc(i: number, length: number): number {
    // crc(page) = pre[i + L] ^ pre[i]·x^(8L); zeroing the CRC field xors in field·x^(8(L - 26)).
    // Both terms share the factor x^(8(L - 26)): one long shift instead of two.
    const w = this.win;
    const field = oggCrc32(w, 0, i + 22, i + 26);
    const head = (oggCrc32Shift(this.pre[i]!, 26) ^ field) >>> 0;
    return (this.pre[i + length]! ^ oggCrc32Shift(head, length - 26)) >>> 0;
  }

  /**
   * Finds and emits pages in the window. A candidate ("OggS", version 0) that is not complete yet
   * is waited for; at the end of input (`ending`) it is skipped instead, so a false capture
   * pattern in garbage cannot hide the pages after it (the final EOS page was lost this way).
   * @returns the window index of the first incomplete candidate skipped while ending, or -1.
   */
  private runLenient(out: OggPage[], ending: boolean): number {
    const w = this.win;
    const end = this.winLength;
    let incomplete = -1;
    let i = this.winAt;
    for (;;) {
      while (i + 5 <= end && !(w[i] === 0x4f && w[i + 1] === 0x67 && w[i + 2] === 0x67 && w[i + 3] === 0x53 && w[i + 4] === 0)) i++;
      if (i + 5 > end) {
        // No capture pattern in what is left: keep the last 4 bytes (a pattern may straddle pushes).
        i = Math.max(this.winAt, end - 4);
        this.lenientSkip(i - this.winAt);
        return incomplete;
      }
      this.lenientSkip(i - this.winAt);
      let length = -1;
      if (i + OGG_HEADER_SIZE <= end) {
        const n = w[i + 26]!;
        if (i + OGG_HEADER_SIZE + n <= end) {
          length = OGG_HEADER_SIZE + n;
          for (let k = 0; k < n; k++) length += w[i + OGG_HEADER_SIZE + k]!;
          if (i + length > end) length = -1;
        }
      }
      if (length < 0) {
        if (!ending) return incomplete; // wait for the rest of this page
        if (incomplete < 0) incomplete = i;
        i++;
        continue;
      }
      const bytes = w.subarray(i, i + length);
      const crc = this.windowCrc(i, length);
      const stored = (w[i + 22]! | (w[i + 23]! << 8) | (w[i + 24]! << 16) | (w[i + 25]! << 24)) >>> 0;
      if (crc !== stored && this.onWarning === undefined) {
        i++; // the common case on garbage: no page object, no message
        continue;
      }
      const page = this.checkPage(bytes, crc);
      if (page === undefined) {
        i++; // a false capture pattern, or a damaged page: resume the scan one byte further
        continue;
      }
      this.reportGarbage();
      this.winAt = i + length;
      this.position += length;
      this.synced = true;
      incomplete = -1;
      out.push(page);
      i = this.winAt;
    }
  }

  private lenientSkip(n: number): void {
    if (n <= 0) return;
    this.noteGarbage(n);
    this.winAt += n;
    this.position += n;
  }

  private flushLenient(): OggPage[] {
    const out: OggPage[] = [];
    try {
      const cut = this.runLenient(out, true);
      const left = this.winLength - this.winAt;
      if (cut >= 0) {
        const message = `Ogg input ended inside the page at byte ${this.position - (this.winAt - cut)} (${this.winLength - cut} bytes)`;
        if (!this.allowTruncated) throw new VoicewireError('OGG_TRUNCATED', message, { details: { offset: this.position, buffered: left } });
        if (left > 0) this.noteGarbage(left);
        this.reportGarbage();
        this.onWarning?.({ kind: 'truncated', message, offset: this.position });
      } else {
        if (left > 0) this.noteGarbage(left);
        this.reportGarbage();
      }
    } catch (err) {
      return this.fail(err as VoicewireError, out);
    }
    this.win = new Uint8Array(0);
    this.winLength = this.winAt = 0;
    this.state = S_FAILED; // used up: a later call reports INVALID_STATE
    return out;
  }

  /** Verifies the CRC (computed here unless given); returns the page, or undefined when it failed and bad pages are skipped. */
  private checkPage(bytes: Uint8Array, computed?: number): OggPage | undefined {
    const n = bytes[26]!;
    const stored = u32le(bytes, 22);
    let crc: number;
    if (computed === undefined) {
      // RFC 3533 §6: the CRC is computed over the whole page with the CRC field set to zero.
      crc = oggPageCrc(bytes);
    } else {
      crc = computed;
    }
    const serial = u32le(bytes, 14);
    const sequence = u32le(bytes, 18);
    if (crc !== stored) {
      const message = `Ogg page at byte ${this.position} (serial ${serial}, sequence ${sequence}) fails its CRC: stored 0x${stored.toString(16).padStart(8, '0')}, computed 0x${crc.toString(16).padStart(8, '0')}`;
      if (this.strict) throw new VoicewireError('OGG_CRC_MISMATCH', message, { details: { offset: this.position, serial, sequence } });
      this.onWarning?.({ kind: 'crc-mismatch', message, offset: this.position, serial });
      return undefined;
    }
    const headerType = bytes[5]!;
    return {
      offset: this.position,
      headerType,
      continued: (headerType & OGG_CONTINUED) !== 0,
      bos: (headerType & OGG_BOS) !== 0,
      eos: (headerType & OGG_EOS) !== 0,
      granule: granuleOf(bytes),
      serial,
      sequence,
      segments: bytes.subarray(OGG_HEADER_SIZE, OGG_HEADER_SIZE + n),
      body: bytes.subarray(OGG_HEADER_SIZE + n),
      bytes,
    };
  }

  /** Strict mode: the bytes where the next page should begin are not a page header. */
  private corrupt(found: Uint8Array): never {
    const hex = Array.from(found, (b) => b.toString(16).padStart(2, '0')).join(' ');
    throw new VoicewireError(
      'OGG_CORRUPT',
      `the Ogg stream is damaged at byte ${this.position}: expected the next page ("OggS", version 0), found bytes ${hex} (pass strict: false to skip to the next page)`,
      { details: { offset: this.position } },
    );
  }

  private skipGarbage(n: number): void {
    this.noteGarbage(n);
    this.queue.skip(n);
    this.position += n;
  }

  private noteGarbage(n: number): void {
    if (this.garbageLength === 0) this.garbageStart = this.position;
    this.garbageLength += n;
    if (this.garbageLength > this.maxGarbage) {
      throw new VoicewireError('OGG_INVALID_PAGE', `no valid Ogg page in ${this.garbageLength} bytes from byte ${this.garbageStart}: not an Ogg stream`, {
        details: { offset: this.garbageStart, length: this.garbageLength },
      });
    }
  }

  private reportGarbage(): void {
    if (this.garbageLength === 0) return;
    const length = this.garbageLength;
    this.garbageLength = 0;
    this.onWarning?.({ kind: 'garbage', message: `skipped ${length} bytes without a valid Ogg page at byte ${this.garbageStart}`, offset: this.garbageStart });
  }
}

/** The packets of one page of a followed logical stream, as read by {@link OggPacketReader}. */
export interface OggPagePackets {
  /** Serial number of the logical stream. */
  readonly serial: number;
  /** Page sequence number. */
  readonly sequence: number;
  /** Byte offset of the page in the input. */
  readonly offset: number;
  /**
   * The page's granule position: for codecs like Opus, the position reached by the LAST packet in
   * {@link packets}; `-1n` when no packet completes on this page.
   */
  readonly granule: bigint;
  /** This page begins the stream. */
  readonly bos: boolean;
  /** This page ends the stream. */
  readonly eos: boolean;
  /**
   * The packets that complete on this page, in order (possibly none). A packet that lay within
   * one page is a view of the input; one that spanned pages was reassembled into one new array.
   */
  readonly packets: Uint8Array[];
}

/** Options of {@link OggPacketReader}. */
export interface OggPacketReaderOptions extends OggPageReaderOptions {
  /**
   * Decides, for each beginning-of-stream page, whether its logical stream is followed. It gets
   * the serial and the start of the stream's first packet (the BOS page's first packet, or what
   * of it the page holds). Default: follow every stream.
   */
  select?: (serial: number, firstPacket: Uint8Array) => boolean;
  /**
   * Largest packet reassembled across pages, in bytes; a larger one raises `OGG_PACKET_TOO_LARGE`.
   * Default 16 MiB (room for cover art in a comment header; Opus audio packets are < 64 KB).
   */
  maxPacketSize?: number;
}

interface StreamState {
  nextSequence: number;
  /** Fragments of a packet continued on the next page. */
  parts: Uint8Array[];
  partLength: number;
}

/** Most distinct ignored serials remembered (each is reported once); beyond this, no more reports. */
const MAX_IGNORED = 1024;

/**
 * Reads the packets of the logical streams it follows (RFC 3533 §5–6): lacing values of 255
 * continue a packet, a smaller value ends it (so a packet whose length is a multiple of 255 ends
 * with a 0), and a packet may span pages (flag `continued`). Emits one {@link OggPagePackets} per
 * page of a followed stream. Lost continuations and pages of other streams are reported through
 * `onWarning`.
 * Errors are those of {@link OggPageReader}, plus `OGG_PACKET_TOO_LARGE`; `OGG_SEQUENCE_GAP` when
 * a followed stream's page sequence number jumps (a `sequence-gap` warning with `strict: false`);
 * and from {@link flush}, `OGG_TRUNCATED` when the input ended inside a page or a followed stream
 * has no EOS page (`truncated`/`missing-eos` warnings with `allowTruncated`).
 */
export class OggPacketReader implements Incremental<Uint8Array, OggPagePackets> {
  private readonly pages: OggPageReader;
  private readonly select: ((serial: number, firstPacket: Uint8Array) => boolean) | undefined;
  private readonly onWarning: ((w: OggWarning) => void) | undefined;
  private readonly maxPacketSize: number;
  private readonly strict: boolean;
  private readonly allowTruncated: boolean;
  private readonly streams = new Map<number, StreamState>();
  private readonly ignored = new Set<number>();
  private pendingError: VoicewireError | undefined;
  private failure: VoicewireError | undefined;
  /** Used up by `flush()` (a flag, not an Error: building one costs its stack trace on every stream). */
  private flushed = false;

  constructor(options: OggPacketReaderOptions = {}) {
    options = checkReaderOptions(options, 'OggPacketReader');
    if (options.select !== undefined && typeof options.select !== 'function') throw new VoicewireError('INVALID_ARGUMENT', `OggPacketReader select must be a function, got ${describe(options.select)}`);
    if (options.maxPacketSize !== undefined && !(typeof options.maxPacketSize === 'number' && options.maxPacketSize >= 0 && !Number.isNaN(options.maxPacketSize))) {
      throw new VoicewireError('INVALID_ARGUMENT', `OggPacketReader maxPacketSize must be a non-negative number, got ${shown(options.maxPacketSize)}`);
    }
    this.pages = new OggPageReader(options);
    this.select = options.select;
    this.onWarning = options.onWarning;
    this.maxPacketSize = options.maxPacketSize ?? 16 * 1024 * 1024;
    this.strict = options.strict ?? true;
    this.allowTruncated = options.allowTruncated ?? false;
  }

  /** Total bytes consumed so far. */
  get offset(): number {
    return this.pages.offset;
  }

  /** Pushes bytes; returns the packets of every followed page they complete. */
  push(chunk: Uint8Array): OggPagePackets[] {
    this.checkUsable();
    let pages: OggPage[];
    try {
      pages = this.pages.push(chunk);
    } catch (err) {
      this.failure = err as VoicewireError;
      throw err;
    }
    return this.handlePages(pages);
  }

  /**
   * Ends the input: raises `OGG_TRUNCATED` if it ended inside a page or a followed stream has no
   * EOS page (RFC 3533 §4: every logical stream ends with one); with `allowTruncated`, reports them.
   */
  flush(): OggPagePackets[] {
    this.checkUsable();
    try {
      this.pages.flush();
      for (const [serial, s] of this.streams) {
        const lost = s.partLength > 0 ? ` (a ${s.partLength}-byte packet was left incomplete)` : '';
        const message = `Ogg stream ${serial} ended without an EOS page at byte ${this.pages.offset}${lost}: the input was truncated`;
        if (!this.allowTruncated) throw new VoicewireError('OGG_TRUNCATED', message, { details: { offset: this.pages.offset, serial } });
        this.onWarning?.({ kind: 'missing-eos', message, offset: this.pages.offset, serial });
      }
    } catch (err) {
      this.failure = toVoicewireError(err, 'OGG_INVALID_PAGE');
      throw this.failure;
    }
    this.streams.clear();
    this.flushed = true;
    return [];
  }

  /** Stops following a stream (its later pages are reported as `other-stream`). */
  unfollow(serial: number): void {
    if (this.streams.delete(serial)) this.ignore(serial);
  }

  private checkUsable(): void {
    if (this.pendingError) {
      const err = this.pendingError;
      this.pendingError = undefined;
      throw err;
    }
    if (this.failure) throw new VoicewireError('INVALID_STATE', `OggPacketReader cannot be used after an error (${this.failure.code})`, { cause: this.failure });
    if (this.flushed) throw new VoicewireError('INVALID_STATE', 'OggPacketReader cannot be used after flush()');
  }

  private handlePages(pages: OggPage[]): OggPagePackets[] {
    const out: OggPagePackets[] = [];
    for (const page of pages) {
      try {
        const r = this.handlePage(page);
        if (r) out.push(r);
      } catch (err) {
        const e = toVoicewireError(err, 'OGG_INVALID_PAGE');
        this.failure = e;
        if (out.length === 0) throw e;
        this.pendingError = e;
        return out;
      }
    }
    return out;
  }

  private ignore(serial: number): void {
    if (this.ignored.size < MAX_IGNORED) this.ignored.add(serial);
  }

  private handlePage(page: OggPage): OggPagePackets | undefined {
    let s = this.streams.get(page.serial);
    if (s === undefined) {
      if (this.ignored.has(page.serial)) return undefined;
      if (page.bos && !page.continued && (this.select === undefined || this.select(page.serial, firstPacketOf(page)))) {
        s = { nextSequence: page.sequence, parts: [], partLength: 0 };
        this.streams.set(page.serial, s);
      } else {
        const why = page.bos ? 'not selected' : 'no beginning-of-stream page was seen';
        this.onWarning?.({ kind: 'other-stream', message: `ignoring Ogg stream ${page.serial} (${why})`, offset: page.offset, serial: page.serial });
        this.ignore(page.serial);
        return undefined;
      }
    }
    // Sequence numbers count pages of one logical stream (RFC 3533 §6); a jump means lost pages,
    // and with them the rest of any packet that was being continued.
    let dropLeading = false;
    if (page.sequence !== s.nextSequence) {
      const message = `Ogg stream ${page.serial}: page sequence ${page.sequence} follows ${(s.nextSequence - 1) >>> 0} (pages lost)`;
      if (this.strict) throw new VoicewireError('OGG_SEQUENCE_GAP', `${message} at byte ${page.offset}`, { details: { offset: page.offset, serial: page.serial, sequence: page.sequence, expected: s.nextSequence } });
      this.onWarning?.({ kind: 'sequence-gap', message, offset: page.offset, serial: page.serial });
      this.dropPartial(s, page, 'pages were lost');
      dropLeading = page.continued;
    } else if (page.continued && s.partLength === 0) {
      this.onWarning?.({ kind: 'packet-lost', message: `Ogg stream ${page.serial}: page ${page.sequence} continues a packet that never began`, offset: page.offset, serial: page.serial });
      dropLeading = true;
    } else if (!page.continued && s.partLength > 0) {
      this.dropPartial(s, page, 'the next page does not continue it');
    }
    s.nextSequence = (page.sequence + 1) >>> 0;

    const packets: Uint8Array[] = [];
    const seg = page.segments;
    const body = page.body;
    let start = 0; // body offset of the current packet's bytes on this page
    let at = 0;
    for (let i = 0; i < seg.length; i++) {
      const v = seg[i]!;
      at += v;
      if (v === 255) continue;
      // A lacing value below 255 ends the packet (RFC 3533 §5).
      if (dropLeading) {
        dropLeading = false;
      } else if (s.partLength > 0) {
        packets.push(this.assemble(s, body.subarray(start, at), page));
      } else {
        packets.push(body.subarray(start, at));
      }
      start = at;
    }
    if (start < at) {
      // The last lacing value was 255: the packet continues on the next page.
      if (!dropLeading) this.appendPart(s, body.subarray(start, at), page);
    }
    if (page.eos) {
      if (s.partLength > 0) this.dropPartial(s, page, 'the stream ended');
      this.streams.delete(page.serial);
      this.ignore(page.serial);
    }
    return { serial: page.serial, sequence: page.sequence, offset: page.offset, granule: page.granule, bos: page.bos, eos: page.eos, packets };
  }

  private appendPart(s: StreamState, part: Uint8Array, page: OggPage): void {
    if (s.partLength + part.length > this.maxPacketSize) {
      throw new VoicewireError('OGG_PACKET_TOO_LARGE', `Ogg stream ${page.serial}: a packet exceeds maxPacketSize (${this.maxPacketSize} bytes) at byte ${page.offset}`, {
        details: { offset: page.offset, serial: page.serial, maxPacketSize: this.maxPacketSize },
      });
    }
    // A copy: a view would keep the whole pushed chunk alive (a 255-byte part of a 64 KiB chunk
    // retained 256x what maxPacketSize counted). Copied, retained bytes = counted bytes.
    s.parts.push(part.slice());
    s.partLength += part.length;
  }

  private assemble(s: StreamState, last: Uint8Array, page: OggPage): Uint8Array {
    this.appendPart(s, last, page);
    const out = concatChunks(s.parts, (n) => new Uint8Array(n));
    s.parts = [];
    s.partLength = 0;
    return out;
  }

  private dropPartial(s: StreamState, page: OggPage, why: string): void {
    if (s.partLength === 0) return;
    this.onWarning?.({ kind: 'packet-lost', message: `Ogg stream ${page.serial}: dropped an incomplete ${s.partLength}-byte packet (${why})`, offset: page.offset, serial: page.serial });
    s.parts = [];
    s.partLength = 0;
  }
}

/** The BOS page's first packet (or the part of it on the page). */
function firstPacketOf(page: OggPage): Uint8Array {
  let len = 0;
  for (let i = 0; i < page.segments.length; i++) {
    const v = page.segments[i]!;
    len += v;
    if (v < 255) break;
  }
  return page.body.subarray(0, len);
}

/** Options of {@link OggPageWriter}. */
export interface OggPageWriterOptions {
  /** Bitstream serial number (unsigned 32-bit). Default: random. */
  serial?: number;
}

/** A granule position: a signed 64-bit bigint, or an integer number from -1 to 2^53 - 1. */
function checkGranule(granule: unknown, what: string): void {
  if (typeof granule === 'bigint') {
    if (granule < -(1n << 63n) || granule >= 1n << 63n) throw new VoicewireError('INVALID_ARGUMENT', `${what} must fit in a signed 64-bit integer, got ${granule}`);
    return;
  }
  if (typeof granule !== 'number' || !Number.isSafeInteger(granule) || granule < -1) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a bigint or an integer ≥ -1, got ${typeof granule === 'number' ? granule : describe(granule)}`);
}

function checkOptions<T extends object>(options: T | null | undefined, what: string): T {
  if (options === undefined) return {} as T;
  if (options === null || typeof options !== 'object') throw new VoicewireError('INVALID_ARGUMENT', `${what} options must be an object, got ${describe(options)}`);
  return options;
}

/** Writes a granule position (signed 64-bit little-endian); accepts a number or a bigint. */
function writeGranule(page: Uint8Array, at: number, granule: bigint | number): void {
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  if (typeof granule === 'bigint') {
    view.setBigInt64(at, granule, true);
  } else if (granule === -1) {
    view.setUint32(at, 0xffffffff, true);
    view.setUint32(at + 4, 0xffffffff, true);
  } else {
    view.setUint32(at, granule % 0x100000000, true);
    view.setUint32(at + 4, Math.floor(granule / 0x100000000), true);
  }
}

/**
 * Builds one Ogg page (RFC 3533 §6) with its CRC. `segments` are the lacing values and `body`
 * their bytes (the sum of `segments` must equal `body.length`; at most 255 segments).
 */
export function buildOggPage(fields: {
  headerType: number;
  granule: bigint | number;
  serial: number;
  sequence: number;
  segments: ArrayLike<number>;
  body: Uint8Array;
}): Uint8Array {
  if (fields === null || typeof fields !== 'object') throw new VoicewireError('INVALID_ARGUMENT', `buildOggPage takes an object, got ${describe(fields)}`);
  if (!(fields.body instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `buildOggPage body must be a Uint8Array, got ${describe(fields.body)}`);
  if (fields.segments === null || typeof fields.segments !== 'object' || typeof fields.segments.length !== 'number') throw new VoicewireError('INVALID_ARGUMENT', `buildOggPage segments must be an array of lacing values, got ${describe(fields.segments)}`);
  for (const [name, v, max] of [['headerType', fields.headerType, 0xff], ['serial', fields.serial, 0xffffffff], ['sequence', fields.sequence, 0xffffffff]] as const) {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) throw new VoicewireError('INVALID_ARGUMENT', `buildOggPage ${name} must be an integer 0–${max}, got ${shown(v)}`);
  }
  checkGranule(fields.granule, 'buildOggPage granule');
  const n = fields.segments.length;
  if (n > 255) throw new VoicewireError('INVALID_ARGUMENT', `an Ogg page holds at most 255 segments, got ${n}`);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const v = fields.segments[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 255) throw new VoicewireError('INVALID_ARGUMENT', `buildOggPage lacing value ${i} must be an integer 0–255, got ${shown(v)}`);
    sum += v;
  }
  if (sum !== fields.body.length) throw new VoicewireError('INVALID_ARGUMENT', `lacing values sum to ${sum} but the body has ${fields.body.length} bytes`);
  const page = new Uint8Array(OGG_HEADER_SIZE + n + sum);
  page[0] = 0x4f; // O
  page[1] = 0x67; // g
  page[2] = 0x67; // g
  page[3] = 0x53; // S
  page[4] = 0;
  page[5] = fields.headerType;
  writeGranule(page, 6, fields.granule);
  const view = new DataView(page.buffer);
  view.setUint32(14, fields.serial >>> 0, true);
  view.setUint32(18, fields.sequence >>> 0, true);
  page[26] = n;
  for (let i = 0; i < n; i++) page[OGG_HEADER_SIZE + i] = fields.segments[i]!;
  page.set(fields.body, OGG_HEADER_SIZE + n);
  view.setUint32(22, oggCrc32(page), true); // CRC field is still zero here
  return page;
}

interface QueuedPacket {
  data: Uint8Array;
  /** Bytes of `data` already written to earlier pages. */
  done: number;
  granule: bigint | number;
}

/**
 * Writes packets of one logical stream into Ogg pages: serial number, sequence numbers, lacing
 * (a packet of length L takes ⌊L/255⌋ values of 255 then L mod 255), at most 255 segments per page,
 * packets spanning pages when needed (flag `continued`, granule -1 on a page where none ends).
 *
 * Packets are queued with {@link addPacket} and leave as pages when {@link flushPage} is called
 * (the caller's flush policy) or when the queue no longer fits one page. A packet that fits in a
 * fresh page is never split: the page in progress is closed first.
 */
export class OggPageWriter {
  /** Bitstream serial number. */
  readonly serial: number;
  private seq = 0;
  private queue: QueuedPacket[] = [];
  /** Lacing values the queued packets need. */
  private queuedSegments = 0;
  private ended = false;

  constructor(options: OggPageWriterOptions = {}) {
    const o = checkOptions(options, 'OggPageWriter');
    if (o.serial !== undefined && !(typeof o.serial === 'number' && Number.isInteger(o.serial) && o.serial >= 0 && o.serial <= 0xffffffff)) {
      throw new VoicewireError('INVALID_ARGUMENT', `OggPageWriter serial must be an integer 0–4294967295, got ${shown(o.serial)}`);
    }
    this.serial = (o.serial ?? Math.floor(Math.random() * 0x100000000)) >>> 0;
  }

  /** Sequence number of the next page. */
  get sequence(): number {
    return this.seq;
  }

  /** Packets queued and not yet written. */
  get pendingPackets(): number {
    return this.queue.length;
  }

  /**
   * Queues a packet. `granule` is the page granule position to write if this packet is the last
   * one completed on its page. Returns the pages this closes (when the queue outgrew one page).
   */
  addPacket(data: Uint8Array, granule: bigint | number): Uint8Array[] {
    if (this.ended) throw new VoicewireError('INVALID_STATE', 'OggPageWriter: the stream has ended (EOS written)');
    if (!(data instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `OggPageWriter.addPacket takes a Uint8Array packet, got ${describe(data)}`);
    checkGranule(granule, 'OggPageWriter.addPacket granule');
    const need = Math.floor(data.length / 255) + 1;
    const out: Uint8Array[] = [];
    if (this.queue.length > 0 && this.queuedSegments + need > 255 && need <= 255) out.push(...this.flushPage());
    this.queue.push({ data, done: 0, granule });
    this.queuedSegments += need;
    while (this.queuedSegments > 255) out.push(this.writePage(0, 255));
    return out;
  }

  /**
   * Writes every queued packet into pages now; with `eos`, the last page written carries the EOS
   * flag (an empty EOS page with granule `eosGranule`, default -1, when nothing is queued).
   * The first page of the stream always carries BOS.
   */
  flushPage(options: { eos?: boolean; eosGranule?: bigint | number } = {}): Uint8Array[] {
    if (this.ended) throw new VoicewireError('INVALID_STATE', 'OggPageWriter: the stream has ended (EOS written)');
    if (options === null || typeof options !== 'object') throw new VoicewireError('INVALID_ARGUMENT', `OggPageWriter.flushPage options must be an object, got ${describe(options)}`);
    if (options.eosGranule !== undefined) checkGranule(options.eosGranule, 'OggPageWriter.flushPage eosGranule');
    const out: Uint8Array[] = [];
    if (this.queue.length === 0) {
      if (options.eos) {
        out.push(this.emit(OGG_EOS, options.eosGranule ?? -1, [], new Uint8Array(0)));
        this.ended = true;
      }
      return out;
    }
    while (this.queue.length > 0) {
      const last = this.queuedSegments <= 255;
      out.push(this.writePage(last && options.eos ? OGG_EOS : 0, Math.min(255, this.queuedSegments)));
    }
    if (options.eos) this.ended = true;
    return out;
  }

  /** Writes one page holding up to `maxSegments` lacing values from the queue. */
  private writePage(flags: number, maxSegments: number): Uint8Array {
    const segments: number[] = [];
    const parts: Uint8Array[] = [];
    let granule: bigint | number = -1;
    const continued = this.queue.length > 0 && this.queue[0]!.done > 0 ? OGG_CONTINUED : 0;
    while (this.queue.length > 0 && segments.length < maxSegments) {
      const p = this.queue[0]!;
      const rest = p.data.length - p.done;
      const need = Math.floor(rest / 255) + 1;
      const room = maxSegments - segments.length;
      if (need <= room) {
        for (let i = 0; i < need - 1; i++) segments.push(255);
        segments.push(rest % 255);
        parts.push(p.data.subarray(p.done));
        granule = p.granule;
        this.queue.shift();
        this.queuedSegments -= need;
      } else {
        // The packet continues on the next page: fill the room with 255s (RFC 3533 §5).
        for (let i = 0; i < room; i++) segments.push(255);
        const take = room * 255;
        parts.push(p.data.subarray(p.done, p.done + take));
        p.done += take;
        this.queuedSegments -= room;
      }
    }
    const body = concatChunks(parts, (n) => new Uint8Array(n));
    return this.emit(flags | continued, granule, segments, body);
  }

  private emit(flags: number, granule: bigint | number, segments: number[], body: Uint8Array): Uint8Array {
    // RFC 3533 §4: the first page of a logical bitstream is its beginning-of-stream page.
    const bos = this.seq === 0 ? OGG_BOS : 0;
    return buildOggPage({ headerType: flags | bos, granule, serial: this.serial, sequence: this.seq++, segments, body });
  }
}
