/**
 * Byte plumbing shared by every incremental parser: a queue of chunks read across boundaries
 * (the `consume(n)` idea of ws's Receiver) and typed-array view helpers. Platform-neutral.
 */
import { bytesArg, shown } from './args.js';
import { VoicewireError } from './errors.js';

const EMPTY = new Uint8Array(0);

function outOfRange(method: string, n: unknown, size: number): VoicewireError {
  return new VoicewireError('INVALID_ARGUMENT', `ByteQueue.${method}: ${shown(n)} is not a whole number of bytes within the ${size} buffered`);
}

/**
 * A FIFO of byte chunks. Reads return a view when the bytes lie in one chunk and make exactly one
 * copy when they straddle chunks, so total copying is linear in the input and no chunk is ever
 * concatenated with the rest. Pushed chunks are kept by reference: do not mutate them afterwards.
 */
export class ByteQueue {
  private chunks: Uint8Array[] = [];
  private head = 0; // index of the first live chunk
  private offset = 0; // read offset inside chunks[head]
  private size = 0;

  /** Bytes buffered. */
  get length(): number {
    return this.size;
  }

  /** Appends a chunk (kept by reference). Empty chunks are ignored. */
  push(chunk: Uint8Array): void {
    if (bytesArg(chunk, 'ByteQueue.push chunk').byteLength === 0) return;
    this.chunks.push(chunk);
    this.size += chunk.byteLength;
  }

  /** The byte at `index` from the read position, without consuming. `index < length` is required. */
  peekByte(index: number): number {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) throw outOfRange('peekByte', index, this.size);
    let i = this.head;
    let at = index + this.offset;
    for (;;) {
      const c = this.chunks[i]!;
      if (at < c.byteLength) return c[at]!;
      at -= c.byteLength;
      i++;
    }
  }

  /** `n` bytes from the read position without consuming them (a view or one copy). */
  peek(n: number): Uint8Array {
    return this.take(n, false);
  }

  /** Consumes and returns `n` bytes (`n <= length`): a view when contiguous, else one copy. */
  read(n: number): Uint8Array {
    return this.take(n, true);
  }

  /** Consumes `n` bytes, copying them into `dst` at `dstOffset`. */
  readInto(dst: Uint8Array, dstOffset: number, n: number): void {
    bytesArg(dst, 'ByteQueue.readInto dst');
    if (!Number.isInteger(n) || n < 0 || n > this.size) throw outOfRange('readInto', n, this.size);
    if (!Number.isInteger(dstOffset) || dstOffset < 0 || dstOffset > dst.length - n) {
      throw new VoicewireError('INVALID_ARGUMENT', `ByteQueue.readInto: ${n} bytes at offset ${shown(dstOffset)} do not fit a destination of ${dst.length}`);
    }
    let written = 0;
    while (written < n) {
      const c = this.chunks[this.head]!;
      const avail = c.byteLength - this.offset;
      const k = Math.min(avail, n - written);
      dst.set(c.subarray(this.offset, this.offset + k), dstOffset + written);
      written += k;
      this.advance(k);
    }
  }

  /** Consumes and discards `n` bytes (at most `length`). */
  skip(n: number): void {
    if (!Number.isInteger(n) || n < 0) throw outOfRange('skip', n, this.size);
    let left = Math.min(n, this.size);
    while (left > 0) {
      const c = this.chunks[this.head]!;
      const k = Math.min(c.byteLength - this.offset, left);
      this.advance(k);
      left -= k;
    }
  }

  /** Consumes everything buffered. */
  readAll(): Uint8Array {
    return this.read(this.size);
  }

  /** Drops everything buffered. */
  clear(): void {
    this.chunks = [];
    this.head = 0;
    this.offset = 0;
    this.size = 0;
  }

  private take(n: number, consume: boolean): Uint8Array {
    if (!Number.isInteger(n) || n < 0 || n > this.size) throw outOfRange(consume ? 'read' : 'peek', n, this.size);
    if (n === 0) return EMPTY;
    const first = this.chunks[this.head]!;
    if (first.byteLength - this.offset >= n) {
      const view = first.subarray(this.offset, this.offset + n);
      if (consume) this.advance(n);
      return view;
    }
    const out = new Uint8Array(n);
    let written = 0;
    let i = this.head;
    let off = this.offset;
    while (written < n) {
      const c = this.chunks[i]!;
      const k = Math.min(c.byteLength - off, n - written);
      out.set(c.subarray(off, off + k), written);
      written += k;
      i++;
      off = 0;
    }
    if (consume) this.skip(n);
    return out;
  }

  private advance(k: number): void {
    this.offset += k;
    this.size -= k;
    if (this.offset === this.chunks[this.head]!.byteLength) {
      this.chunks[this.head] = EMPTY; // release the reference
      this.head++;
      this.offset = 0;
      if (this.head === this.chunks.length) {
        this.chunks.length = 0;
        this.head = 0;
      } else if (this.head > 64 && this.head * 2 > this.chunks.length) {
        this.chunks = this.chunks.slice(this.head);
        this.head = 0;
      }
    }
  }
}

/**
 * An Int16Array over `bytes` (little-endian hosts). A view when `byteOffset` is even, else a copy:
 * typed-array views need aligned offsets, and a Node Buffer from a pool can start anywhere.
 */
export function int16View(bytes: Uint8Array): Int16Array {
  bytesArg(bytes, 'int16View: bytes');
  const n = bytes.byteLength >> 1;
  if ((bytes.byteOffset & 1) === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, n);
  const copy = new Uint8Array(n * 2);
  copy.set(bytes.subarray(0, n * 2));
  return new Int16Array(copy.buffer, 0, n);
}

/** A Float32Array over `bytes`: a view when `byteOffset` is a multiple of 4, else a copy. */
export function float32View(bytes: Uint8Array): Float32Array {
  bytesArg(bytes, 'float32View: bytes');
  const n = bytes.byteLength >> 2;
  if ((bytes.byteOffset & 3) === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, n);
  const copy = new Uint8Array(n * 4);
  copy.set(bytes.subarray(0, n * 4));
  return new Float32Array(copy.buffer, 0, n);
}

/** Joins `parts` into one new array made by `alloc` (always a copy, also of a single part). */
export function concatChunks<T extends Uint8Array | Int16Array | Float32Array>(parts: readonly T[], alloc: (length: number) => T): T {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = alloc(total);
  let at = 0;
  for (const p of parts) {
    out.set(p as never, at);
    at += p.length;
  }
  return out;
}

/** The bytes of any typed array, as a Uint8Array view (no copy). */
export function bytesOf(view: ArrayBufferView): Uint8Array {
  if (!ArrayBuffer.isView(view)) throw new VoicewireError('INVALID_ARGUMENT', `bytesOf: view must be a typed array or DataView, got ${describe(view)}`);
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** Accepts a Uint8Array (a Node Buffer is one) or an ArrayBuffer; throws INVALID_ARGUMENT otherwise. */
export function toBytes(input: unknown, what = 'input'): Uint8Array {
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) return bytesOf(input);
  throw new VoicewireError('INVALID_ARGUMENT', `${shown(what)} must be a Uint8Array or ArrayBuffer, got ${describe(input)}`);
}

/** A short description of a value's type, for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return (value as object).constructor?.name ?? 'object';
}
