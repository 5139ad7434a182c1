/**
 * Budgets of costly engine resources (issue 20): a count of live instances with a limit, so no
 * request, socket or key can make the process hold more model memory than it was given.
 *
 * A pocketsphinx decoder holds its own copy of the acoustic model, dictionary and language model:
 * ~95 MB of native memory and ~0.3 s of CPU to load. The process keeps at most
 * {@link EngineBudget.limit} of them (in use or idle in a pool); a request that would need one
 * more gets `ENGINE_BUSY` (1011: the server is busy, the client is not at fault).
 */
import { totalmem } from 'node:os';
import type { SttEngine, SttEngineStream } from '../sessions/engine.js';
import { arrayArg, describeValue, functionArg, objectArg, optionsArg, stringArg } from '../util/args.js';
import { ERROR_CODES, VoicewireError, type ErrorCode } from '../util/errors.js';

/** Native memory of one pocketsphinx decoder with Debian's US English model, bytes (measured: 93–98 MB of RSS each). */
export const STT_DECODER_BYTES = 96 * 2 ** 20;

/** Share of the machine's memory the default {@link defaultSttDecoders} gives to decoders. */
export const STT_DECODER_MEMORY_SHARE = 0.25;

/** Most decoders the default allows, whatever the memory (each also takes CPU while it decodes). */
export const MAX_DEFAULT_STT_DECODERS = 32;

/**
 * The default budget of live STT decoders: a quarter of the machine's memory at
 * {@link STT_DECODER_BYTES} each, at least 1 and at most {@link MAX_DEFAULT_STT_DECODERS}
 * (24 GB → 32; 4 GB → 10; 1 GB → 2).
 */
export function defaultSttDecoders(totalBytes: number = totalmem()): number {
  if (typeof totalBytes !== 'number' || !(totalBytes >= 0)) throw new VoicewireError('INVALID_ARGUMENT', `defaultSttDecoders: totalBytes must be a number ≥ 0, got ${describeValue(totalBytes)}`);
  return Math.max(1, Math.min(MAX_DEFAULT_STT_DECODERS, Math.floor((totalBytes * STT_DECODER_MEMORY_SHARE) / STT_DECODER_BYTES)));
}

function countArg(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be an integer ≥ 1, got ${describeValue(value)}`);
  return value;
}

/** Options of {@link EngineBudget}. */
export interface EngineBudgetOptions {
  /** The error a full budget answers with. Default `ENGINE_BUSY`. */
  code?: ErrorCode;
  /** Names the limit in the error message (e.g. `limits.sttDecoders`). Default: none. */
  limitName?: string;
}

/**
 * A count of live instances with a limit. `acquire` takes a slot and returns its release (safe to
 * call twice); past the limit it first asks the reclaimers to free an idle instance (a pool's
 * spare decoder), then throws.
 */
export class EngineBudget {
  private live_ = 0;
  private limit_: number;
  private readonly reclaimers = new Set<() => boolean>();
  private readonly code: ErrorCode;
  private readonly limitName: string | undefined;

  /** `what` names the instances in errors (`STT decoders`); `limit` is an integer ≥ 1. */
  constructor(
    readonly what: string,
    limit: number,
    options: EngineBudgetOptions = {},
  ) {
    stringArg(what, 'EngineBudget: what');
    this.limit_ = countArg(limit, 'EngineBudget: limit');
    options = optionsArg(options, 'EngineBudget: options');
    const code = options.code ?? 'ENGINE_BUSY';
    if (typeof code !== 'string' || !Object.prototype.hasOwnProperty.call(ERROR_CODES, code)) throw new VoicewireError('INVALID_ARGUMENT', `EngineBudget: options.code must be an error code, got ${describeValue(code)}`);
    if (options.limitName !== undefined) stringArg(options.limitName, 'EngineBudget: options.limitName');
    this.code = code;
    this.limitName = options.limitName;
  }

  /** The most instances that may be live at once. */
  get limit(): number {
    return this.limit_;
  }

  /** Instances live now (in use or idle in a pool). */
  get live(): number {
    return this.live_;
  }

  /** Changes the limit; live instances above a lower limit stay until released, new ones wait below it. */
  setLimit(limit: number): void {
    this.limit_ = countArg(limit, 'EngineBudget.setLimit: limit');
    while (this.live_ > this.limit_ && this.reclaimOne()) {
      /* idle instances above the new limit are freed now */
    }
  }

  /**
   * Takes one slot.
   * @throws VoicewireError `ENGINE_BUSY` (or the budget's code) when the limit is reached and no idle instance could be freed.
   */
  acquire(): () => void {
    if (this.live_ >= this.limit_) this.reclaimOne();
    if (this.live_ >= this.limit_) {
      const name = this.limitName === undefined ? '' : ` (${this.limitName})`;
      throw new VoicewireError(this.code, `the server holds its limit of ${this.limit_} ${this.what}${name}: try again later`);
    }
    this.live_++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.live_--;
    };
  }

  /**
   * Registers a function that frees one idle instance (releasing its slot) and returns true, or
   * returns false when it has none. Returns the function that removes it.
   */
  addReclaimer(reclaim: () => boolean): () => void {
    functionArg(reclaim, 'EngineBudget.addReclaimer: reclaim');
    this.reclaimers.add(reclaim);
    return () => this.reclaimers.delete(reclaim);
  }

  private reclaimOne(): boolean {
    for (const r of [...this.reclaimers]) if (r()) return true;
    return false;
  }
}

/**
 * Live instances counted per key (an API key, a socket), each key bounded by the same limit. The
 * map holds only keys with live instances.
 */
export class KeyedBudget {
  private readonly counts = new Map<string, number>();
  private readonly limit_: number;

  /** `what` names the instances in errors (`live STT requests`); `limitName` the limit (`limits.sttDecodersPerKey`). */
  constructor(
    readonly what: string,
    limit: number,
    private readonly limitName: string,
  ) {
    stringArg(what, 'KeyedBudget: what');
    this.limit_ = countArg(limit, 'KeyedBudget: limit');
    stringArg(limitName, 'KeyedBudget: limitName');
  }

  get limit(): number {
    return this.limit_;
  }

  /** Live instances of `key`. */
  live(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /**
   * Takes one slot of `key` (`holder` names it in the error: `this API key`); returns its release
   * (safe to call twice).
   * @throws VoicewireError `LIMIT_EXCEEDED` (1008) when `key` holds the limit.
   */
  acquire(key: string, holder: string): () => void {
    stringArg(key, 'KeyedBudget.acquire: key');
    stringArg(holder, 'KeyedBudget.acquire: holder');
    const n = this.live(key);
    if (n >= this.limit_) throw new VoicewireError('LIMIT_EXCEEDED', `${holder} already holds ${n} ${this.what} (limit ${this.limitName} ${this.limit_})`);
    this.counts.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(key) ?? 1) - 1;
      if (left <= 0) this.counts.delete(key);
      else this.counts.set(key, left);
    };
  }
}

/**
 * An STT engine whose every `open` first takes a slot from each of `slots` (in order; a refusal
 * releases the slots already taken), and gives them back when the stream closes or its open
 * fails. The server bounds a heavy engine's streams per socket and per key with it.
 */
export function limitSttStreams(inner: SttEngine, slots: ReadonlyArray<() => () => void>): SttEngine {
  objectArg(inner, 'limitSttStreams: inner');
  functionArg(inner.open, 'limitSttStreams: inner.open');
  arrayArg(slots, 'limitSttStreams: slots').forEach((s, i) => functionArg(s, `limitSttStreams: slots[${i}]`));
  return {
    async open(config, emit) {
      const releases: Array<() => void> = [];
      const releaseAll = (): void => {
        for (const r of releases.splice(0)) r();
      };
      try {
        for (const take of slots) releases.push(take());
        const stream = await inner.open(config, emit);
        const limited: SttEngineStream = {
          info: stream.info,
          push: (frame, audioSamples) => stream.push(frame, audioSamples),
          close: () => {
            try {
              stream.close();
            } finally {
              releaseAll();
            }
          },
        };
        if (stream.end) limited.end = () => stream.end!();
        return limited;
      } catch (err) {
        releaseAll();
        throw err;
      }
    },
  };
}

/**
 * The process's budget of live STT decoders, shared by every pocketsphinx engine (default
 * {@link defaultSttDecoders}; a server sets it from `limits.sttDecoders`).
 */
export const STT_DECODER_BUDGET = new EngineBudget('STT decoders', defaultSttDecoders(), { limitName: 'limits.sttDecoders' });

/**
 * Slots of a process budget held per tenant, with a reserve (issue 31: four keys could take all
 * 32 STT decoders, and every other caller was refused): a tenant already holding a slot takes
 * another only while more than `reserve` of the `limit()` are free, so the last `reserve` slots go
 * one each to tenants holding none. The map holds only tenants with slots.
 */
export class ReservedShares {
  private readonly counts = new Map<string, number>();
  private held_ = 0;

  /**
   * `what` names the slots in errors (`STT decoders`); `limit` reads the budget's limit now;
   * `reserve` (an integer ≥ 0; 0: no reserve) and `limitName` name the reserve (`limits.sttDecoderReserve`).
   */
  constructor(
    readonly what: string,
    private readonly limit: () => number,
    private readonly reserve: number,
    private readonly limitName: string,
  ) {
    stringArg(what, 'ReservedShares: what');
    functionArg(limit, 'ReservedShares: limit');
    if (reserve !== 0) countArg(reserve, 'ReservedShares: reserve');
    stringArg(limitName, 'ReservedShares: limitName');
  }

  /** Slots held now, all tenants together. */
  get held(): number {
    return this.held_;
  }

  /** Slots `tenant` holds. */
  live(tenant: string): number {
    return this.counts.get(tenant) ?? 0;
  }

  /**
   * Takes one slot of `tenant` (`holder` names it in the error: `this organization`); returns its
   * release (safe to call twice).
   * @throws VoicewireError `ENGINE_BUSY` when `tenant` holds a slot and at most `reserve` (but some) are free.
   */
  acquire(tenant: string, holder: string): () => void {
    stringArg(tenant, 'ReservedShares.acquire: tenant');
    const n = this.live(tenant);
    const limit = this.limit();
    const free = limit - this.held_;
    // None free at all: the budget's own refusal (after it frees an idle instance, if it can) says so.
    if (n > 0 && free > 0 && free <= this.reserve) {
      throw new VoicewireError('ENGINE_BUSY', `${holder} holds ${n} of the server's ${limit} ${this.what}; the last ${this.reserve} free are kept for callers holding none (${this.limitName}): try again later`);
    }
    this.counts.set(tenant, n + 1);
    this.held_++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held_--;
      const left = (this.counts.get(tenant) ?? 1) - 1;
      if (left <= 0) this.counts.delete(tenant);
      else this.counts.set(tenant, left);
    };
  }
}
