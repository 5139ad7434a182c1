/**
 * Tiny sherpa-onnx model folders for tests, made at test time by test/fixtures/models/make-models.py
 * with Debian's python3-onnx (fixed seed: the same bytes each run), in a temporary folder.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The system's python, which has Debian's python3-onnx (not the `python3` first on PATH). */
export const SYSTEM_PYTHON = '/usr/bin/python3';
const SCRIPT = join(import.meta.dirname, '..', 'fixtures', 'models', 'make-models.py');

/** A way to break a model folder (see make-models.py `--break`). */
export type ModelBreak = 'no-metadata' | 'bad-tokens' | 'no-tokens' | 'corrupt-onnx';
/** A way to break a Silero VAD file (see make-models.py `--break`). */
export type VadBreak = 'corrupt-onnx' | 'bad-names' | 'bad-state';

export interface MakeVadOptions {
  /** Matrix products per 32 ms window: more makes the VAD slower. Default 1. */
  loops?: number;
  /** Never hears speech (its threshold is above full scale). */
  deaf?: boolean;
  broken?: VadBreak;
}

export interface MakeModelOptions {
  /** Matrix products per token (Piper) or per chunk (nemo-ctc-online): more makes the model slower. Default 1. */
  loops?: number;
  /** Speakers (Piper). Default 1. */
  speakers?: number;
  broken?: ModelBreak;
  /** A CTC model's `language` metadata (nemo-ctc, nemo-ctc-online, zipformer2-ctc), e.g. `de` or `en,fr`. */
  language?: string;
}

/** What make-models.py makes: runnable tiny models, and metadata-only folders (`meta-*`) for detection. */
export type ModelKind = 'piper' | 'nemo-ctc' | 'nemo-ctc-online' | 'zipformer2-ctc' | 'whisper' | 'meta-whisper' | 'meta-whisper-en' | 'meta-sense-voice' | 'meta-kokoro';

/** Model folders under one temporary root; `cleanup()` removes them all. */
export class ModelFolders {
  readonly root = mkdtempSync(join(tmpdir(), 'vw-sherpa-'));
  private n = 0;

  make(kind: ModelKind, options: MakeModelOptions = {}): string {
    const dir = join(this.root, `${kind}-${this.n++}`);
    const args = [SCRIPT, kind, dir];
    if (options.loops !== undefined) args.push('--loops', String(options.loops));
    if (options.speakers !== undefined) args.push('--speakers', String(options.speakers));
    if (options.broken !== undefined) args.push('--break', options.broken);
    if (options.language !== undefined) args.push('--language', options.language);
    execFileSync('nice', ['-n', '15', SYSTEM_PYTHON, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    return dir;
  }

  /** A Silero-v5-shaped energy detector (make-models.py silero-vad): the path of its .onnx file. */
  makeVad(options: MakeVadOptions = {}): string {
    const dir = join(this.root, `silero-vad-${this.n++}`);
    const args = [SCRIPT, 'silero-vad', dir];
    if (options.loops !== undefined) args.push('--loops', String(options.loops));
    if (options.deaf) args.push('--deaf');
    if (options.broken !== undefined) args.push('--break', options.broken);
    execFileSync('nice', ['-n', '15', SYSTEM_PYTHON, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    return join(dir, 'silero_vad.onnx');
  }

  cleanup(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}
