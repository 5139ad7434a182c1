/**
 * Debian's pocketsphinx (`libpocketsphinx3`, 5prealpha API) through koffi. Only the calls the
 * engine needs; every pointer stays inside {@link PocketsphinxDecoder}.
 *
 * The calls that take CPU (loading a model, decoding audio, an utterance's final passes) run as
 * koffi async calls on libuv's thread pool, so the event loop stays free for every other request
 * (issue 25: a loop held for seconds answered 408 to requests whose headers had arrived). A decoder
 * is used by one call at a time; different decoders run in parallel. sphinxbase's log is one
 * global FILE that `ps_init -logfn` would reopen under a decoder logging on another thread: it is
 * switched off once, at load, instead.
 *
 * Those calls wait their turn in {@link POCKETSPHINX_CALLS} (issue 31): a few at once (the server's
 * `limits.sttDecodeThreads`), the callers (a decoder's `tenant`, set by the stream that holds it)
 * served in turn, so one key's eight streams no longer fill libuv's pool ahead of another's request.
 *
 * Install on Debian/Ubuntu: `apt-get install pocketsphinx pocketsphinx-en-us`.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { objectArg, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { defaultNativeCalls, FairLimiter } from './fair-limiter.js';
import type { TenantPath } from './fair-queue.js';

/**
 * The process's pocketsphinx calls that take CPU (model loads, decoding, utterance ends): at most
 * {@link defaultNativeCalls} at once by default (a server sets `limits.sttDecodeThreads`), callers in turn.
 */
export const POCKETSPHINX_CALLS = new FairLimiter(defaultNativeCalls());

/** The Debian packages the STT engine needs. */
export const POCKETSPHINX_PACKAGES = 'pocketsphinx pocketsphinx-en-us';

/** Where `pocketsphinx-en-us` installs the US English model. */
export const DEBIAN_EN_US_MODEL = '/usr/share/pocketsphinx/model/en-us';

/** A pocketsphinx model: acoustic model directory, language model, pronunciation dictionary. */
export interface PocketsphinxModel {
  /** Acoustic model directory (`-hmm`). */
  hmm: string;
  /** Binary or ARPA n-gram language model (`-lm`). */
  lm: string;
  /** Pronunciation dictionary (`-dict`). */
  dict: string;
}

/** The Debian US English model, or `dir` laid out the same way (`dir/en-us/`, `dir/en-us.lm.bin`, `dir/cmudict-en-us.dict`). */
export function pocketsphinxModelFromDir(dir: string = DEBIAN_EN_US_MODEL): PocketsphinxModel {
  stringArg(dir, 'pocketsphinxModelFromDir: dir');
  return { hmm: join(dir, 'en-us'), lm: join(dir, 'en-us.lm.bin'), dict: join(dir, 'cmudict-en-us.dict') };
}

/** A model's three paths are strings (they become pocketsphinx's command line). */
export function checkModel(model: PocketsphinxModel, what: string): void {
  objectArg(model, what);
  for (const k of ['hmm', 'lm', 'dict'] as const) stringArg(model[k], `${what}.${k}`);
}

/** One recognized word; frames are 10 ms from the start of the utterance. */
export interface PsWord {
  word: string;
  startFrame: number;
  endFrame: number;
}

/** A koffi function: called at once, or with `.async(...args, callback)` on libuv's thread pool. */
type Fn = ((...args: unknown[]) => unknown) & { async(...args: unknown[]): void };

interface Lib {
  ps_args: Fn;
  cmd_ln_parse_r: Fn;
  cmd_ln_free_r: Fn;
  ps_init: Fn;
  ps_free: Fn;
  ps_start_utt: Fn;
  ps_end_utt: Fn;
  ps_process_raw: Fn;
  ps_get_hyp: Fn;
  ps_get_in_speech: Fn;
  ps_seg_iter: Fn;
  ps_seg_next: Fn;
  ps_seg_word: Fn;
  ps_seg_frames: Fn;
  ps_seg_free: Fn;
  ps_set_jsgf_string: Fn;
  ps_set_search: Fn;
  ps_get_feat: Fn;
  ps_start_stream: Fn;
  malloc_trim: Fn | undefined;
  koffi: Koffi;
}

/** The part of koffi this file uses. */
interface Koffi {
  load(path: string): { func(name: string, ret: string, args: string[]): Fn };
  struct(name: string, def: Record<string, string>): unknown;
  decode(ptr: unknown, type: unknown, len?: number): unknown;
  encode(ptr: unknown, ...args: unknown[]): void;
  offsetof(type: string, member: string): number;
}

let lib: Lib | undefined;
let libError: string | undefined;

function load(): Lib {
  if (lib) return lib;
  if (libError) throw new VoicewireError('ENGINE_UNAVAILABLE', libError);
  try {
    const require = createRequire(import.meta.url);
    const koffi = require('koffi') as Koffi;
    defineFeatStructs(koffi);
    const ps = koffi.load('libpocketsphinx.so.3');
    const sb = koffi.load('libsphinxbase.so.3');
    lib = {
      ps_args: ps.func('ps_args', 'void *', []),
      cmd_ln_parse_r: sb.func('cmd_ln_parse_r', 'void *', ['void *', 'void *', 'int', 'const char **', 'int']),
      cmd_ln_free_r: sb.func('cmd_ln_free_r', 'int', ['void *']),
      ps_init: ps.func('ps_init', 'void *', ['void *']),
      ps_free: ps.func('ps_free', 'int', ['void *']),
      ps_start_utt: ps.func('ps_start_utt', 'int', ['void *']),
      ps_end_utt: ps.func('ps_end_utt', 'int', ['void *']),
      ps_process_raw: ps.func('ps_process_raw', 'int', ['void *', 'const int16_t *', 'size_t', 'int', 'int']),
      ps_get_hyp: ps.func('ps_get_hyp', 'const char *', ['void *', 'int32_t *']),
      ps_get_in_speech: ps.func('ps_get_in_speech', 'uint8_t', ['void *']),
      ps_seg_iter: ps.func('ps_seg_iter', 'void *', ['void *']),
      ps_seg_next: ps.func('ps_seg_next', 'void *', ['void *']),
      ps_seg_word: ps.func('ps_seg_word', 'const char *', ['void *']),
      ps_seg_frames: ps.func('ps_seg_frames', 'void', ['void *', '_Out_ int *', '_Out_ int *']),
      ps_seg_free: ps.func('ps_seg_free', 'void', ['void *']),
      ps_set_jsgf_string: ps.func('ps_set_jsgf_string', 'int', ['void *', 'const char *', 'const char *']),
      ps_set_search: ps.func('ps_set_search', 'int', ['void *', 'const char *']),
      ps_get_feat: ps.func('ps_get_feat', 'void *', ['void *']),
      ps_start_stream: ps.func('ps_start_stream', 'int', ['void *']),
      malloc_trim: trimFunction(koffi),
      koffi,
    };
    // No log at all (NULL disables it): never a log file reopened while another thread writes to it.
    sb.func('err_set_logfp', 'void', ['void *'])(null);
    return lib;
  } catch (err) {
    libError = `pocketsphinx is not installed: install the Debian packages \`${POCKETSPHINX_PACKAGES}\` (and the npm package koffi): ${err instanceof Error ? err.message : String(err)}`;
    throw new VoicewireError('ENGINE_UNAVAILABLE', libError, { cause: err });
  }
}

/**
 * glibc's `malloc_trim`, or undefined elsewhere (musl, macOS). Decoders are made on libuv's threads,
 * so their ~95 MB each land in several malloc arenas; a freed decoder's pages stay in its arena
 * (RSS grew ~85 MB over the soak test's rounds) until trimmed, which releases free pages in every arena.
 */
function trimFunction(koffi: Koffi): Fn | undefined {
  try {
    return koffi.load('libc.so.6').func('malloc_trim', 'int', ['size_t']);
  } catch {
    return undefined;
  }
}

/**
 * sphinxbase's `feat_t` up to its CMN state, and `cmn_t` (sphinxbase feat.h / cmn.h, 5prealpha; the
 * layout Debian's libsphinxbase3 has): read to put a reused decoder's cepstral mean back where a new
 * one starts.
 */
function defineFeatStructs(koffi: Koffi): void {
  koffi.struct('vw_cmn_t', { cmn_mean: 'float *', cmn_var: 'float *', sum: 'float *', nframe: 'int32_t', veclen: 'int32_t' });
  koffi.struct('vw_feat_t', {
    refcount: 'int',
    name: 'void *',
    cepsize: 'int32_t',
    n_stream: 'int32_t',
    stream_len: 'void *',
    window_size: 'int32_t',
    n_sv: 'int32_t',
    sv_len: 'void *',
    subvecs: 'void *',
    sv_buf: 'void *',
    sv_dim: 'int32_t',
    cmn: 'int',
    varnorm: 'int32_t',
    agc: 'int',
    compute_feat: 'void *',
    cmn_struct: 'vw_cmn_t *',
  });
}

/** A decoder's live CMN state as it was when the decoder was made. */
interface CmnState {
  /** The `cmn_t` pointer. */
  ptr: unknown;
  mean: number[];
  sum: number[];
  nframe: number;
}

/** Undefined when pocketsphinx and the model `dir` are usable here, else the reason (what to install). */
export function pocketsphinxAvailable(model: PocketsphinxModel = pocketsphinxModelFromDir()): string | undefined {
  checkModel(model, 'pocketsphinxAvailable: model');
  try {
    load();
  } catch (err) {
    return (err as Error).message;
  }
  for (const p of [model.hmm, model.lm, model.dict]) {
    if (!existsSync(p)) return `pocketsphinx model file ${p} is missing: install the Debian packages \`${POCKETSPHINX_PACKAGES}\``;
  }
  return undefined;
}

/** Options of one decoder. */
export interface DecoderOptions {
  model: PocketsphinxModel;
  /** A JSGF grammar to decode with instead of the n-gram model (small vocabularies, tests). */
  jsgf?: string;
  /** Whose turn the model load waits for (see {@link POCKETSPHINX_CALLS}). Default: anonymous. */
  tenant?: TenantPath;
}

/** Calls `fn` on libuv's thread pool. */
function callAsync(fn: Fn, ...args: unknown[]): Promise<unknown> {
  return new Promise((resolve, reject) => fn.async(...args, (err: unknown, result: unknown) => (err ? reject(err) : resolve(result))));
}

/** One pocketsphinx decoder at 16 kHz. Not thread-safe: one call at a time; one per stream. */
export class PocketsphinxDecoder {
  private ps: unknown;
  private readonly lib: Lib;
  private readonly cmn: CmnState | undefined;
  /** Whose turn this decoder's calls wait for: the caller of the stream holding it. */
  tenant: TenantPath = [];

  /** Loads the model (0.3–0.7 s of CPU) off the event loop. */
  static async create(options: DecoderOptions): Promise<PocketsphinxDecoder> {
    const lib = load();
    const m = options.model;
    const argv = ['-hmm', m.hmm, '-lm', m.lm, '-dict', m.dict, '-samprate', '16000'];
    const config = lib.cmd_ln_parse_r(null, lib.ps_args(), argv.length, argv, 1);
    if (!config) throw new VoicewireError('ENGINE_UNAVAILABLE', `pocketsphinx rejected its configuration (model ${m.hmm})`);
    let ps: unknown;
    try {
      ps = await POCKETSPHINX_CALLS.run(options.tenant ?? [], () => callAsync(lib.ps_init, config));
    } finally {
      // ps_init keeps its own reference to the configuration.
      lib.cmd_ln_free_r(config);
    }
    if (!ps) throw new VoicewireError('ENGINE_UNAVAILABLE', `pocketsphinx could not load the model in ${m.hmm}`);
    return new PocketsphinxDecoder(lib, ps, options);
  }

  private constructor(lib: Lib, ps: unknown, options: DecoderOptions) {
    this.lib = lib;
    this.ps = ps;
    if (options.jsgf !== undefined) {
      if (this.lib.ps_set_jsgf_string(this.ps, 'grammar', options.jsgf) !== 0 || this.lib.ps_set_search(this.ps, 'grammar') !== 0) {
        this.free();
        throw new VoicewireError('INVALID_ARGUMENT', 'pocketsphinx rejected the JSGF grammar');
      }
    }
    this.cmn = this.readCmn();
  }

  /** The live CMN state, or undefined when the library's layout is not the one expected (then a reused decoder keeps its adapted mean). */
  private readCmn(): CmnState | undefined {
    try {
      const k = this.lib.koffi;
      const feat = this.lib.ps_get_feat(this.ps);
      if (!feat) return undefined;
      const f = k.decode(feat, 'vw_feat_t') as { cepsize: number; cmn_struct: unknown };
      if (!f.cmn_struct) return undefined;
      const c = k.decode(f.cmn_struct, 'vw_cmn_t') as { cmn_mean: unknown; sum: unknown; nframe: number; veclen: number };
      // A layout that differs from the one declared shows here: the CMN vector is the cepstrum's size.
      if (!(c.veclen === f.cepsize && c.veclen > 0 && c.veclen <= 64 && c.cmn_mean && c.sum)) return undefined;
      return { ptr: f.cmn_struct, mean: k.decode(c.cmn_mean, 'float', c.veclen) as number[], sum: k.decode(c.sum, 'float', c.veclen) as number[], nframe: c.nframe };
    } catch {
      return undefined;
    }
  }

  /**
   * Puts the decoder back in the state of a new one between two streams. pocketsphinx adapts to
   * the audio it hears: its noise estimate (reset by `ps_start_stream`) and its cepstral mean
   * (CMN, put back to the value it had when the decoder was made). A reused decoder would
   * otherwise hear the next request through the previous caller's channel: other words for the
   * same audio.
   */
  reset(): void {
    if (!this.ps) return;
    this.lib.ps_start_stream(this.ps);
    const c = this.cmn;
    if (c === undefined) return;
    const k = this.lib.koffi;
    const s = k.decode(c.ptr, 'vw_cmn_t') as { cmn_mean: unknown; sum: unknown };
    k.encode(s.cmn_mean, 'float', c.mean, c.mean.length);
    k.encode(s.sum, 'float', c.sum, c.sum.length);
    k.encode(c.ptr, k.offsetof('vw_cmn_t', 'nframe'), 'int32_t', c.nframe);
  }

  startUtt(): void {
    this.lib.ps_start_utt(this.ps);
  }

  /** Ends the utterance: its final passes run off the event loop. */
  async endUtt(): Promise<void> {
    await POCKETSPHINX_CALLS.run(this.tenant, () => callAsync(this.lib.ps_end_utt, this.ps));
  }

  /** Decodes 16 kHz samples off the event loop (`samples` must not change until it resolves). */
  async process(samples: Int16Array): Promise<void> {
    if (samples.length > 0) await POCKETSPHINX_CALLS.run(this.tenant, () => callAsync(this.lib.ps_process_raw, this.ps, samples, samples.length, 0, 0));
  }

  /** True while pocketsphinx's own voice-activity detector hears speech. */
  inSpeech(): boolean {
    return Number(this.lib.ps_get_in_speech(this.ps)) !== 0;
  }

  /** The current (partial or final) hypothesis as words with frames; fillers and silences left out. */
  words(): PsWord[] {
    const out: PsWord[] = [];
    const hyp = this.lib.ps_get_hyp(this.ps, null);
    if (!hyp) return out;
    for (let seg = this.lib.ps_seg_iter(this.ps); seg; seg = this.lib.ps_seg_next(seg)) {
      const word = String(this.lib.ps_seg_word(seg));
      const sf = [0];
      const ef = [0];
      this.lib.ps_seg_frames(seg, sf, ef);
      if (word.startsWith('<') || word.startsWith('[') || word === '</s>') continue;
      // Alternate pronunciations come back as word(2).
      out.push({ word: word.replace(/\(\d+\)$/, ''), startFrame: sf[0]!, endFrame: ef[0]! });
    }
    return out;
  }

  free(): void {
    if (!this.ps) return;
    this.lib.ps_free(this.ps);
    this.ps = null;
    // Its pages back to the system, off the event loop (a trim walks every arena: milliseconds).
    this.lib.malloc_trim?.async(0, () => undefined);
  }
}
