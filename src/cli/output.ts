/**
 * Where `convert` writes, so that no data is ever lost (issue 10 §2):
 * - a file OUT is written to a temporary file in OUT's folder, renamed over OUT only once the
 *   conversion succeeded: a failure (or Ctrl-C) leaves OUT as it was and no partial file behind;
 * - OUT may not be the input (same device and inode: a symlink or hard link is caught too);
 * - a regular file (OUT, or stdout redirected to one) can be patched afterwards (the WAV sizes);
 * - binary audio is not written to a terminal unless asked for with `-o -`.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { fstatSync, readFileSync, realpathSync, statSync, unlinkSync, type Stats } from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { createWriteStream, write } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { Writable } from 'node:stream';
import { VoicewireError } from '../util/errors.js';

const writeFd = promisify(write);

/** An output being written. */
export interface CliOutput {
  /** Appends bytes (waits for the destination: memory stays bounded). */
  write(chunk: Uint8Array): Promise<void>;
  /** Bytes written so far. */
  readonly written: number;
  /** True when bytes already written can be rewritten with {@link patch} (a regular file). */
  readonly seekable: boolean;
  /** Rewrites bytes at `at` (counted from the start of this output); only when seekable. */
  patch(at: number, bytes: Uint8Array): Promise<void>;
  /** Success: everything is written (and a temporary file renamed into place). */
  commit(): Promise<void>;
  /** Failure: removes a temporary file. Never throws. */
  abort(): Promise<void>;
}

function ioError(what: string, name: string, err: unknown): VoicewireError {
  const e = err as NodeJS.ErrnoException;
  return new VoicewireError('IO_ERROR', `cannot ${what} ${name}: ${e.code ?? e.message}`, { cause: err });
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

function fstatOrNull(fd: number): Stats | null {
  try {
    return fstatSync(fd);
  } catch {
    return null;
  }
}

const sameFile = (a: Stats | null, b: Stats | null): boolean => a !== null && b !== null && a.dev === b.dev && a.ino === b.ino;

/**
 * Refuses an output that is the input file. Compared by device and inode, so a symlink, a hard
 * link or another spelling of the path is caught; stdout redirected to the input (`> in.wav`,
 * `>> in.wav`) is caught too (the shell has already truncated it, or reading would never end).
 */
export function checkNotInput(inputStat: Stats | null, inputName: string, output: string | undefined): void {
  if (inputStat === null || !inputStat.isFile()) return;
  const toStdout = output === undefined || output === '-';
  const outStat = toStdout ? fstatOrNull(1) : statOrNull(output);
  if (sameFile(inputStat, outStat)) {
    const where = toStdout ? 'stdout is redirected to' : `-o ${output} is`;
    throw new VoicewireError('CLI_USAGE', `${where} the input file ${inputName}: write to another file (the input would be destroyed)`);
  }
}

/** Refuses binary output to a terminal unless stdout was named with `-o -`. */
export function checkNotTerminal(output: string | undefined, isTTY: boolean): void {
  if (output === undefined && isTTY) {
    throw new VoicewireError('CLI_USAGE', 'refusing to write binary audio to a terminal: redirect stdout, give -o FILE, or -o - to force');
  }
}

/**
 * Ctrl-C or kill while a temporary file exists: it goes, the target stays as it was. Installed
 * before the file is created, so no signal lands between its creation and the guard.
 */
function guardTemp(path: string): Array<[NodeJS.Signals, () => void]> {
  const handlers: Array<[NodeJS.Signals, () => void]> = [];
  for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    const h = (): void => {
      try {
        unlinkSync(path);
      } catch {
        // already gone, or never made
      }
      process.exit(code);
    };
    process.once(sig, h);
    handlers.push([sig, h]);
  }
  return handlers;
}

/** A file descriptor written in order; patchable with positional writes when it is a regular file. */
class FdOutput implements CliOutput {
  written = 0;
  private handlers: Array<[NodeJS.Signals, () => void]> = [];

  constructor(
    private readonly fd: number,
    private readonly name: string,
    /** File offset of our first byte, or null when the fd cannot be patched. */
    private readonly base: number | null,
    private readonly handle: FileHandle | null = null,
    private readonly temp: { path: string; target: string } | null = null,
    /** The temporary file's signal guard, installed before the file was made (guardTemp). */
    guard: Array<[NodeJS.Signals, () => void]> = [],
  ) {
    this.handlers = guard;
  }

  get seekable(): boolean {
    return this.base !== null;
  }

  async write(chunk: Uint8Array): Promise<void> {
    let off = 0;
    while (off < chunk.byteLength) {
      let n: number;
      try {
        // position null: the fd's own offset advances, so a shell writing after us appends.
        ({ bytesWritten: n } = await writeFd(this.fd, chunk, off, chunk.byteLength - off, null));
      } catch (err) {
        throw ioError('write', this.name, err);
      }
      off += n;
    }
    this.written += chunk.byteLength;
  }

  async patch(at: number, bytes: Uint8Array): Promise<void> {
    if (this.base === null) throw new VoicewireError('INVALID_STATE', `${this.name} cannot be patched`);
    try {
      // A positional write (pwrite) leaves the fd's offset at the end.
      await writeFd(this.fd, bytes, 0, bytes.byteLength, this.base + at);
    } catch (err) {
      throw ioError('write', this.name, err);
    }
  }

  async commit(): Promise<void> {
    if (this.temp === null || this.handle === null) return;
    try {
      await this.handle.datasync(); // the bytes are on disk before the name points at them
      await this.handle.close();
      await rename(this.temp.path, this.temp.target);
    } catch (err) {
      await this.abort();
      throw ioError('write', this.name, err);
    }
    this.unhook();
  }

  async abort(): Promise<void> {
    if (this.handle !== null) await this.handle.close().catch(() => {});
    if (this.temp !== null) await unlink(this.temp.path).catch(() => {});
    this.unhook();
  }

  private unhook(): void {
    for (const [sig, h] of this.handlers) process.removeListener(sig, h);
    this.handlers = [];
  }
}

/** A stream (stdout to a pipe or terminal, a FIFO, a device): writes honour backpressure. */
class StreamOutput implements CliOutput {
  written = 0;
  readonly seekable = false;
  private failure: VoicewireError | undefined;
  private readonly failed: Promise<never>;

  constructor(
    private readonly stream: Writable,
    private readonly name: string,
    private readonly owned: boolean,
  ) {
    this.failed = new Promise<never>((_, reject) => {
      stream.on('error', (err: NodeJS.ErrnoException) => {
        this.failure ??= ioError('write', name, err);
        reject(this.failure);
      });
    });
    this.failed.catch(() => {});
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (chunk.byteLength === 0) return;
    if (this.failure) throw this.failure;
    this.written += chunk.byteLength;
    if (!this.stream.write(chunk)) await Promise.race([once(this.stream, 'drain'), this.failed]);
  }

  async patch(): Promise<void> {
    throw new VoicewireError('INVALID_STATE', `${this.name} cannot be patched`);
  }

  async commit(): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.owned) return;
    await Promise.race([new Promise<void>((resolve) => this.stream.end(resolve)), this.failed]);
  }

  async abort(): Promise<void> {
    if (this.owned) this.stream.destroy();
  }
}

const O_APPEND = 0o2000; // Linux; read from /proc/self/fdinfo, which only Linux has

/**
 * Where fd 1 stands in a regular file, from /proc/self/fdinfo (Linux): its offset, or null when
 * it cannot be known or patching is unsafe (O_APPEND: positional writes would append).
 */
function stdoutFileOffset(): number | null {
  try {
    const text = readFileSync('/proc/self/fdinfo/1', 'utf8');
    const pos = /^pos:\s*(\d+)/m.exec(text);
    const flags = /^flags:\s*([0-7]+)/m.exec(text);
    if (pos === null || flags === null) return null;
    if ((parseInt(flags[1]!, 8) & O_APPEND) !== 0) return null;
    return Number(pos[1]);
  } catch {
    return null;
  }
}

/** Opens stdout: a regular file it is redirected to is written through fd 1 (and patchable); anything else as a stream. */
function openStdout(): CliOutput {
  const st = fstatOrNull(1);
  if (st !== null && st.isFile()) return new FdOutput(1, 'stdout', stdoutFileOffset());
  return new StreamOutput(process.stdout, 'stdout', false);
}

/**
 * Opens the output: `-`/undefined is stdout; a path that exists and is not a regular file (a
 * FIFO, /dev/null) is written directly; otherwise a temporary file beside the target, with the
 * target's permissions when it exists, renamed into place by commit(). A symlink is followed:
 * its target is replaced and the link kept.
 */
export async function openOutput(output: string | undefined): Promise<CliOutput> {
  if (output === undefined || output === '-') return openStdout();
  const st = statOrNull(output);
  if (st !== null && st.isDirectory()) throw ioError('write', output, Object.assign(new Error('EISDIR'), { code: 'EISDIR' }));
  if (st !== null && !st.isFile()) {
    const stream = createWriteStream(output, { flags: 'w' });
    await Promise.race([once(stream, 'open'), once(stream, 'error').then(([err]) => Promise.reject(ioError('write', output, err)))]);
    return new StreamOutput(stream, output, true);
  }
  let target = output;
  if (st !== null) {
    try {
      target = realpathSync(output);
    } catch {
      // a dangling or looping link: replace the name itself
    }
  }
  const temp = join(dirname(target), `.${basename(target)}.voicewire-${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  const guard = guardTemp(temp);
  let handle: FileHandle;
  try {
    handle = await open(temp, 'wx', 0o666);
  } catch (err) {
    for (const [sig, h] of guard) process.removeListener(sig, h);
    throw ioError('write', output, err);
  }
  // The same guard stays: removing a signal's last listener and adding another drops a signal
  // that arrived in between (node closes the signal's handle, and libuv the event it queued), so
  // a Ctrl-C just after the file appeared was lost and the conversion went on (issue 25).
  const out = new FdOutput(handle.fd, output, 0, handle, { path: temp, target }, guard);
  // Replacing a file keeps its permissions (the umask applied to the new one).
  if (st !== null) await handle.chmod(st.mode & 0o7777).catch(() => {});
  return out;
}
