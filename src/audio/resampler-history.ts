/**
 * A resampler stage's input history, per channel a linear stretch of frames `[base, len)` that
 * the next outputs read (`base`: the first tap of the next output). Where WebAssembly is there it
 * lives in the kernels' memory (resampler-simd.ts `allocFloats`), so each input frame is written
 * once and the kernels read it in place (issue 34: the per-push copies of history and input, and
 * the per-batch reversed copy, were 10–20 % of a stream's time); a folded stage also keeps its
 * reversed copy there, written as the frames arrive. Without WebAssembly it is a plain
 * Float32Array with the same layout.
 *
 * Layout (floats from `a0`): per channel `[4 pad][cap frames][4 pad][cap reversed]`, then 4 pad;
 * the pads take the 3-float slack of the vector helpers (`reverse`, `scan`, `tame`). The block is
 * returned for reuse when its owner is collected (a `FinalizationRegistry`: the resamplers stay
 * plain objects without a `destroy()`).
 *
 * Platform-neutral: no `node:` imports.
 */
import { allocFloats, freeFloats, memoryF32, reverseInto } from './resampler-simd.js';

/** Frames a push may append in one piece; a larger push goes through in pieces of `cap − len`. */
export const MAX_PIECE = 1 << 16;

interface Block {
  addr: number;
  floats: number;
}

const registry = typeof FinalizationRegistry === 'function' ? new FinalizationRegistry<Block>((b) => freeFloats(b.addr, b.floats)) : null;

export class ResamplerHistory {
  /** Frames each channel holds. */
  cap: number;
  /** End of the valid frames. */
  len = 0;
  /** First frame the next output reads. */
  base = 0;
  /** Float index of the block in {@link view}. */
  private a0 = 0;
  /** Floats per channel. */
  private stride = 0;
  private js: Float32Array | null = null;
  private readonly block: Block = { addr: -1, floats: 0 };

  /**
   * @param reversed keep a reversed copy (for the `fold` kernel; only where the history is in
   * wasm memory: the JS twin reads forwards).
   */
  constructor(readonly channels: number, readonly taps: number, reversed: boolean) {
    this.cap = (taps + 1024 + 3) & ~3;
    // Without a wasm registry nothing would return the block: such a history stays in JS.
    this.inWasm = registry !== null && this.allocate(this.cap, reversed, true);
    if (!this.inWasm) this.allocate(this.cap, false, false);
    this.reversed = reversed && this.inWasm;
    if (this.inWasm) registry!.register(this, this.block, this);
  }

  /** Whether the history is in the wasm memory. */
  readonly inWasm: boolean;
  /** Whether a reversed copy is kept. */
  readonly reversed: boolean;

  /** Takes a block for `cap` frames (in wasm memory: false when none is left). */
  private allocate(cap: number, reversed: boolean, inWasm: boolean): boolean {
    const stride = reversed ? 2 * cap + 8 : cap + 4;
    const floats = this.channels * stride + 4;
    if (inWasm) {
      const addr = allocFloats(floats);
      if (addr < 0) return false;
      this.block.addr = addr;
      this.block.floats = floats;
      this.a0 = addr >> 2;
    } else {
      this.js = new Float32Array(floats);
      this.a0 = 0;
    }
    this.stride = stride;
    this.cap = cap;
    return true;
  }

  /** Returns the wasm block now (a one-shot resampling's end); the history is unusable after. */
  release(): void {
    if (!this.inWasm || this.block.addr < 0) return;
    registry!.unregister(this);
    freeFloats(this.block.addr, this.block.floats);
    this.block.addr = -1;
  }

  /** The array the history is in: fetch it again after anything that may allocate wasm memory. */
  view(): Float32Array {
    return this.js ?? memoryF32();
  }

  /** Index in {@link view} of channel `c`'s frame 0. */
  at(c: number): number {
    return this.a0 + 4 + c * this.stride;
  }

  /** Byte address where channel `c`'s frame 0 sits in the reversed copy (frame j at −4j), or -1. */
  xr(c: number): number {
    return this.reversed ? (this.at(c) + this.cap + 4 + this.cap - 1) * 4 : -1;
  }

  /** Zeros everything; `len` frames of zeros are valid. */
  reset(len: number): void {
    const a = this.a0;
    this.view().fill(0, a, a + this.channels * this.stride + 4);
    this.len = len;
    this.base = 0;
  }

  /** Updates the reversed copy after frames `[from, from + k)` of channel `c` were written. */
  wrote(c: number, from: number, k: number): void {
    if (this.reversed) reverseInto((this.at(c) + from) * 4, this.xr(c) - from * 4, k);
  }

  /** Moves `[base, len)` of each channel to the front (and the reversed copy to its end). */
  compact(): void {
    const keep = this.len - this.base;
    const h = this.view();
    const cap = this.cap;
    for (let c = 0; c < this.channels; c++) {
      const a = this.at(c);
      h.copyWithin(a, a + this.base, a + this.len);
      if (this.reversed) {
        const r = a + cap + 4;
        h.copyWithin(r + cap - keep, r + cap - this.len, r + cap - this.base);
      }
    }
    this.len = keep;
    this.base = 0;
  }

  /**
   * Makes room for `k` more frames (`cap − len ≥ k`), compacting and, for `k` up to
   * {@link MAX_PIECE}, growing (unless the wasm memory's history budget is spent); the valid
   * frames are kept. Returns the frames there is room for (≥ 1).
   */
  room(k: number): number {
    if (this.cap - this.len >= k) return k;
    if (this.base > 0) this.compact();
    if (this.cap - this.len >= k || k > MAX_PIECE) return Math.min(k, this.cap - this.len);
    const keep = this.len;
    const old = { ...this.block };
    const oldAt = Array.from({ length: this.channels }, (_, c) => this.at(c));
    const oldCap = this.cap;
    const oldJs = this.js;
    if (!this.allocate((keep + k + (this.taps >> 1) + 255) & ~255, this.reversed, this.inWasm)) return this.cap - this.len;
    const h = this.view();
    const src = oldJs ?? h;
    for (let c = 0; c < this.channels; c++) {
      h.set(src.subarray(oldAt[c]!, oldAt[c]! + keep), this.at(c));
      if (this.reversed) {
        const r0 = oldAt[c]! + oldCap + 4;
        const r = this.at(c) + this.cap + 4;
        h.copyWithin(r + this.cap - keep, r0 + oldCap - keep, r0 + oldCap);
      }
    }
    if (this.inWasm) freeFloats(old.addr, old.floats);
    return k;
  }
}
