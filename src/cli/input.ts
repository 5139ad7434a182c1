/**
 * The input of `info` and `convert`: a path or `-` (stdin), read as a stream of chunks. Nothing
 * is ever read whole: every command walks the chunks and keeps only what it needs.
 */
import { fstatSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { VoicewireError } from '../util/errors.js';

/** Read size, bytes. */
const CHUNK = 1 << 16;

/** An opened input. */
export interface CliInput {
  /** The name as given (`-` for stdin), for messages. */
  readonly name: string;
  /** The path when the input is a regular file ffmpeg may open itself, else null. */
  readonly path: string | null;
  /** fstat of the opened input, or null when it cannot be known. */
  readonly stat: Stats | null;
  /** The next chunk, or null at the end. @throws IO_ERROR */
  next(): Promise<Uint8Array | null>;
  /** Stops reading and releases the input. Idempotent. */
  close(): Promise<void>;
}

function ioError(name: string, err: unknown): VoicewireError {
  if (err instanceof VoicewireError) return err;
  const e = err as NodeJS.ErrnoException;
  return new VoicewireError('IO_ERROR', `cannot read ${name}: ${e.code ?? e.message}`, { cause: err });
}

class FileInput implements CliInput {
  private closed = false;
  private readonly buffer = new Uint8Array(CHUNK);

  constructor(
    readonly name: string,
    readonly path: string | null,
    readonly stat: Stats,
    private readonly handle: FileHandle,
  ) {}

  async next(): Promise<Uint8Array | null> {
    if (this.closed) return null;
    let n: number;
    try {
      ({ bytesRead: n } = await this.handle.read(this.buffer, 0, CHUNK, null));
    } catch (err) {
      throw ioError(this.name, err);
    }
    // A copy: decoders may keep views of what they were given.
    return n === 0 ? null : this.buffer.slice(0, n);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.handle.close().catch(() => {});
  }
}

class StreamInput implements CliInput {
  readonly path = null;
  private readonly iterator: AsyncIterator<Uint8Array>;
  private done = false;

  constructor(
    readonly name: string,
    readonly stat: Stats | null,
    stream: Readable,
  ) {
    this.iterator = (stream as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  }

  async next(): Promise<Uint8Array | null> {
    if (this.done) return null;
    try {
      const r = await this.iterator.next();
      if (r.done === true) {
        this.done = true;
        return null;
      }
      return r.value;
    } catch (err) {
      this.done = true;
      throw ioError(this.name, err);
    }
  }

  async close(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.iterator.return?.().catch(() => {});
  }
}

/** Opens a path (or `-`, stdin). @throws IO_ERROR when it cannot be opened or is a directory. */
export async function openInput(name: string): Promise<CliInput> {
  if (name === '-') {
    let st: Stats | null = null;
    try {
      st = fstatSync(0);
    } catch {
      // stdin closed: reading reports it
    }
    return new StreamInput('stdin', st, process.stdin);
  }
  let handle: FileHandle;
  try {
    handle = await open(name, 'r');
  } catch (err) {
    throw ioError(name, err);
  }
  let st: Stats;
  try {
    st = await handle.stat();
  } catch (err) {
    await handle.close().catch(() => {});
    throw ioError(name, err);
  }
  if (st.isDirectory()) {
    await handle.close().catch(() => {});
    throw new VoicewireError('IO_ERROR', `cannot read ${name}: EISDIR`);
  }
  // Only a regular file is given to ffmpeg by path (seekable); a FIFO or device is piped.
  return new FileInput(name, st.isFile() ? name : null, st, handle);
}

/** The chunks `held` (already read) then the rest of `input`, as an iterable; returning early closes the input. */
export async function* replay(held: readonly Uint8Array[], input: CliInput): AsyncGenerator<Uint8Array> {
  try {
    for (const h of held) yield h;
    for (let c = await input.next(); c !== null; c = await input.next()) yield c;
  } finally {
    await input.close();
  }
}
