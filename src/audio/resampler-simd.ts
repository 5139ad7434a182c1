/**
 * The resampler's hot loop: a WebAssembly SIMD (f32x4) dot-product kernel, assembled here from
 * its opcodes at module load (about 1 KB; no build step, no binary file), plus a scalar
 * JavaScript twin that performs the very same float32 operations in the very same order, so both
 * give bit-identical output. The twin runs where WebAssembly SIMD is missing.
 *
 * Arithmetic (both backends): per output, 8 float32 partial sums (two f32x4 accumulators taking
 * taps 0–3 and 8–11, and 4–7 and 12–15, of each 16; an 8-tap head goes to them in turn; folded
 * rows, a multiple of 4 taps, put 4-tap block b into accumulator b mod 2, in order), each
 * product rounded to float32 and added in float32, then summed as `a0+a1` lane-wise and
 * `(l0+l1)+(l2+l3)` across lanes. Measured SNR of this arithmetic: ≥ 140 dB on a 1 kHz tone.
 * (`Math.fround` on a double-precision product or sum of two float32 values rounds exactly like
 * float32 hardware: 53 ≥ 2·24 + 2 bits.)
 *
 * Pairs: two outputs of the same phase (k and k + L, M inputs apart) are computed in one pass
 * that loads each coefficient vector once for both (12 loads per 32 multiply-adds instead of 16):
 * 1.25× faster on the 2:1, 3:1 and 3:2 pairs (four accumulators per output, or three outputs per
 * pass, spill registers in V8 and are slower). Each output's arithmetic is the same paired or alone.
 *
 * Order: `run` computes a batch of outputs phase by phase (outputs r, r + L, r + 2L, … share a
 * coefficient row), so a row is read from memory once per batch, not once per output; the order
 * does not change any output's arithmetic.
 *
 * Folded rows (`fold`, {@link runFoldScalar}): where every phase row is symmetric (the integer
 * decimations and 3:2 of a linear-phase prototype, resampler-design.ts `FoldedRows`), tap pairs
 * `x[lo + i] + x[hi − i]` are added before one multiply, read from the input and from a reversed
 * copy of it (`reverse`, written once per input frame by the history): half the multiplies and
 * coefficient loads, 1.2–1.25× faster.
 *
 * Unit rows: where a phase row is a single tap of exactly 1 (phase 0 of every upsampler: the
 * output falls on an input sample), `run` copies that input instead of a dot product — a third of
 * the outputs of 8k→24k and 16k→24k, half of those of 2:1.
 *
 * Decimation by 2 (`runDecimator`): the half-band's zero taps are skipped by de-interleaving the
 * input (`gather`), running the non-zero branch as a FIR, and adding the centre tap (`combine`).
 *
 * Int16 output (`round16`, {@link roundToInt16}): rounding and clamping 8 samples per step; in JS
 * the branchy per-sample rule cost as much as a fifth of an int16 resampling frame.
 *
 * Memory: one shared `WebAssembly.Memory`. Phase tables are copied in once per filter design (they
 * are cached for the life of the process, like the designs; at most 64 MB, beyond which a design
 * runs on the JS twin). Each resampler stage's input history lives there too
 * (resampler-history.ts, returned for reuse when the resampler is collected: no `destroy()`), so
 * the kernels read it in place, the folded ones from a reversed copy kept as input arrives; the
 * outputs go through a scratch area into the caller's array. A history passed as a plain
 * Float32Array (no wasm memory) is copied in per batch instead.
 */
import { MAX_FOLD_DOWN as FOLD_MAX_DOWN, type DecimatorBranches, type FoldedRows, type PolyphaseFilter } from './resampler-design.js';

// ---------------------------------------------------------------------------------------------
// A tiny assembler: just the opcodes the kernel uses (WebAssembly core spec 1.0 + SIMD proposal).
// ---------------------------------------------------------------------------------------------

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

function str(s: string): number[] {
  return [...uleb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

const I32 = 0x7f;
const F32 = 0x7d;
const V128 = 0x7b;
const op = {
  i32Or: 0x72,
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  else: 0x05,
  end: 0x0b,
  brIf: 0x0d,
  drop: 0x1a,
  void: 0x40,
  get: 0x20,
  set: 0x21,
  tee: 0x22,
  i32Load: 0x28,
  f32Load: 0x2a,
  i32Store: 0x36,
  f32Store: 0x38,
  i32Const: 0x41,
  i32Eqz: 0x45,
  i32LtU: 0x49,
  i32GeU: 0x4f,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32GtS: 0x4a,
  i32Mul: 0x6c,
  i32And: 0x71,
  i32Shl: 0x74,
  i32ShrU: 0x76,
  f32Add: 0x92,
  f32Mul: 0x94,
} as const;
const simd = (code: number): number[] => [0xfd, ...uleb(code)];
const V128_LOAD = 0x00;
const I8X16_SHUFFLE = 0x0d;
const V128_CONST = 0x0c;
const F32X4_EXTRACT = 0x1f;
const F32X4_ADD = 0xe4;
const F32X4_MUL = 0xe6;
const V128_STORE = 0x0b;
const V128_AND = 0x4e;
const V128_ANDNOT = 0x4f;
const F32X4_LT = 0x43;
const F32X4_NE = 0x42;
const F32X4_MIN = 0xe8;
const F32X4_MAX = 0xe9;
const V128_OR = 0x50;
const F32X4_GE = 0x46;
const F32X4_TRUNC = 0x69;
const F32X4_ABS = 0xe0;
const F32X4_SUB = 0xe5;
const I32X4_TRUNC_SAT_F32X4_S = 0xf8;
const I16X8_NARROW_I32X4_S = 0x85;
const F32X4_GT = 0x44;
const V128_ANY_TRUE = 0x53;
const I32X4_ALL_TRUE = 0xa3;

// Parameters and locals of `run`.
const P_COEF = 0;
const P_TAPS = 1;
const P_STEP = 2;
const P_NEXT = 3;
const P_X = 4;
const P_PHASE = 5;
const P_OUT = 6;
const P_N = 7;
const P_UP = 8;
const P_DOWN = 9;
const P_COPY = 10;
const L_R = 11;
const L_C = 12;
const L_XP = 13;
const L_END = 14;
const L_XOFF = 15;
const L_K = 16;
const L_OP = 17;
const L_ROW = 18;
const L_XB = 19;
const L_CP = 20;
const L_A = 21; // a0, a1 = 21, 22 (23, 24 unused)
const L_S = 25;
const L_XP2 = 26;
const L_B = 27; // b0, b1 = 27, 28: the second output of a pair (29, 30 unused)
const L_S2 = 31;
const L_CV = 32;

/**
 * `run(coef, taps, step, next, x, phase, out, n, up, down)`: outputs 0 … n−1 of the polyphase
 * filter, the first at `phase` with its first tap at `x`. Computed phase by phase: outputs
 * `r, r + L, r + 2L, …` share one coefficient row and step `M` input samples apart, so each row
 * is loaded once per batch instead of once per output (the 320-phase table of 22.05k→48k is
 * 113 KB, far larger than L1). Every output's own arithmetic is the same whatever the order.
 */
function buildRun(): number[] {
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  const set = (i: number): void => void c.push(op.set, i);
  const i32 = (v: number): void => void c.push(op.i32Const, ...sleb(v));
  const shl2 = (): void => void c.push(op.i32Const, 2, op.i32Shl);
  const addTo = (l: number, v: number): void => {
    get(l);
    i32(v);
    c.push(op.i32Add);
    set(l);
  };
  // Two accumulators per output (a0, a1 / b0, b1): acc[a] += c·x (and the pair's b[a] += c·x2).
  const macN = (pair: boolean, a: number, off: number): void => {
    get(L_C);
    c.push(...simd(V128_LOAD), 2, ...uleb(off));
    set(L_CV);
    for (const [acc, xp] of (pair ? [[L_A + a, L_XP], [L_B + a, L_XP2]] : [[L_A + a, L_XP]]) as [number, number][]) {
      get(acc);
      get(L_CV);
      get(xp);
      c.push(...simd(V128_LOAD), 2, ...uleb(off));
      c.push(...simd(F32X4_MUL), ...simd(F32X4_ADD));
      set(acc);
    }
  };
  // *addr = (s0 + s1) + (s2 + s3) with s = a0 + a1; the address is on the stack.
  const reduceStore = (acc: number, sLocal: number): void => {
    get(acc);
    get(acc + 1);
    c.push(...simd(F32X4_ADD));
    set(sLocal);
    for (const [x, y] of [[0, 1], [2, 3]] as const) {
      get(sLocal);
      c.push(...simd(F32X4_EXTRACT), x);
      get(sLocal);
      c.push(...simd(F32X4_EXTRACT), y, op.f32Add);
    }
    c.push(op.f32Add, op.f32Store, 2, 0);
  };
  const dot = (pair: boolean): void => {
    get(L_ROW);
    c.push(op.tee, L_C);
    get(P_TAPS);
    shl2();
    c.push(op.i32Add);
    set(L_END);
    get(L_XB);
    c.push(op.tee, L_XP);
    if (pair) {
      get(P_DOWN);
      shl2();
      c.push(op.i32Add);
      set(L_XP2);
    } else {
      c.push(op.drop);
    }
    for (let a = 0; a < 2; a++) {
      for (const base of pair ? [L_A, L_B] : [L_A]) {
        c.push(...simd(V128_CONST), ...new Array<number>(16).fill(0));
        set(base + a);
      }
    }
    const bump = (by: number): void => {
      addTo(L_C, by);
      addTo(L_XP, by);
      if (pair) addTo(L_XP2, by);
    };
    get(P_TAPS);
    i32(8);
    c.push(op.i32And, op.if, op.void);
    macN(pair, 0, 0);
    macN(pair, 1, 16);
    bump(32);
    c.push(op.end);
    c.push(op.block, op.void);
    get(L_C);
    get(L_END);
    c.push(op.i32GeU, op.brIf, 0);
    c.push(op.loop, op.void);
    macN(pair, 0, 0);
    macN(pair, 1, 16);
    macN(pair, 0, 32);
    macN(pair, 1, 48);
    bump(64);
    get(L_C);
    get(L_END);
    c.push(op.i32LtU, op.brIf, 0);
    c.push(op.end, op.end);
    get(L_OP);
    reduceStore(L_A, L_S);
    if (pair) {
      get(L_OP);
      get(P_UP);
      shl2();
      c.push(op.i32Add);
      reduceStore(L_B, L_S2);
    }
  };
  const advance = (m: 1 | 2): void => {
    for (const [l, by, sh] of [[L_XB, P_DOWN, 2], [L_OP, P_UP, 2], [L_K, P_UP, 0]] as const) {
      get(l);
      get(by);
      i32(sh + m - 1);
      c.push(op.i32Shl, op.i32Add);
      set(l);
    }
  };

  c.push(op.block, op.void);
  get(P_N);
  c.push(op.i32Eqz, op.brIf, 0);
  c.push(op.loop, op.void); // --- for r = 0 … min(up, n) − 1
  // row = coef + phase·taps·4; xb = x + xoff; op = out + r·4; k = r
  get(P_COEF);
  get(P_PHASE);
  get(P_TAPS);
  c.push(op.i32Mul);
  shl2();
  c.push(op.i32Add);
  set(L_ROW);
  get(P_X);
  get(L_XOFF);
  c.push(op.i32Add);
  set(L_XB);
  get(P_OUT);
  get(L_R);
  shl2();
  c.push(op.i32Add);
  set(L_OP);
  get(L_R);
  set(L_K);
  // cp = copy ? copy[phase] : 0 (1 + the unit tap of a unit-impulse row)
  get(P_COPY);
  c.push(op.if, I32);
  get(P_COPY);
  get(P_PHASE);
  shl2();
  c.push(op.i32Add, op.i32Load, 2, 0, op.else);
  i32(0);
  c.push(op.end);
  set(L_CP);
  c.push(op.loop, op.void); // --- for k = r; k < n; k += up (or 2·up)
  get(L_CP);
  c.push(op.if, op.void);
  get(L_OP);
  get(L_XB);
  get(L_CP);
  shl2();
  c.push(op.i32Add);
  i32(4);
  c.push(op.i32Sub, op.f32Load, 2, 0, op.f32Store, 2, 0);
  advance(1);
  c.push(op.else);
  get(L_K);
  get(P_UP);
  c.push(op.i32Add);
  get(P_N);
  c.push(op.i32LtU, op.if, op.void);
  dot(true);
  advance(2);
  c.push(op.else);
  dot(false);
  advance(1);
  c.push(op.end, op.end);
  get(L_K);
  get(P_N);
  c.push(op.i32LtU, op.brIf, 0, op.end);
  // xoff += step[phase]·4; phase = next[phase]; r += 1; while r < up && r < n
  get(L_XOFF);
  get(P_STEP);
  get(P_PHASE);
  shl2();
  c.push(op.i32Add, op.i32Load, 2, 0);
  shl2();
  c.push(op.i32Add);
  set(L_XOFF);
  get(P_NEXT);
  get(P_PHASE);
  shl2();
  c.push(op.i32Add, op.i32Load, 2, 0);
  set(P_PHASE);
  get(L_R);
  i32(1);
  c.push(op.i32Add, op.tee, L_R);
  get(P_UP);
  c.push(op.i32LtU);
  get(L_R);
  get(P_N);
  c.push(op.i32LtU, op.i32And, op.brIf, 0);
  c.push(op.end, op.end);

  return [4, ...uleb(10), I32, ...uleb(5), V128, 1, I32, 6, V128, ...c];
}

// Parameters and locals of `fold`.
const F_COEF = 0;
const F_TAPS = 1;
const F_STEP = 2;
const F_NEXT = 3;
const F_X = 4;
const F_XR0 = 5;
const F_PHASE = 6;
const F_OUT = 7;
const F_N = 8;
const F_UP = 9;
const F_DOWN = 10;
const F_LOHI = 11;
const FL_R = 12;
const FL_C = 13;
const FL_XP = 14;
const FL_END = 15;
const FL_XOFF = 16;
const FL_K = 17;
const FL_OP = 18;
const FL_ROW = 19;
const FL_XB = 20;
const FL_XRB = 21;
const FL_XQ = 22;
const FL_A = 23; // a0, a1 = 23, 24
const FL_B = 25; // b0, b1 = 25, 26: the second output of a pair
const FL_S = 27;
const FL_CV = 28;
const FL_X1 = 29; // a wide pair's shared input vectors (below)
const FL_R1 = 30;


/**
 * `fold(coef, taps, step, next, x, xr0, phase, out, n, up, down, lohi)`, assembled for one
 * `down` = `D`: `run` over {@link FoldedRows}. Tap i of an output at input `b` multiplies
 * `x[b + lo + i] + x[b + hi − i]`, the second read forwards from a reversed copy of the input
 * (`xr0` is where `x[0]` sits in it, `x[j]` at `xr0 − 4j`), so both are plain vector loads;
 * `lohi` holds `lo·4, hi·4` by phase. Pairs as in `run` (outputs k and k + L share each
 * coefficient load); the pair's second output is `D` inputs on, so its loads use the same
 * pointers with `4D` in the load's offset: three pointers instead of five, which V8 keeps in
 * registers (five spilled: slower than not folding). Same accumulators and reduction as `run`.
 * For D = 1 and 2, outputs come in groups of 2G (G = 4/D) of a phase, paired G steps apart,
 * where the second's inputs are one vector after the first's: the pair then shares its input
 * loads (6 per 8 taps instead of 8; issue 34: 48k → 24k 11–13 % faster); the rest of a phase
 * goes by the pairs and single outputs above. Each output's arithmetic is unchanged.
 */
function buildFold(D: number): number[] {
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  const set = (i: number): void => void c.push(op.set, i);
  const i32 = (v: number): void => void c.push(op.i32Const, ...sleb(v));
  const shl2 = (): void => void c.push(op.i32Const, 2, op.i32Shl);
  const addTo = (l: number, v: number): void => {
    get(l);
    i32(v);
    c.push(op.i32Add);
    set(l);
  };
  const load = (p: number, off: number): void => {
    get(p);
    c.push(...simd(V128_LOAD), 2, ...uleb(off));
  };
  // XQ points at the pair's second output's reversed taps (4D bytes before the first's), so
  // every offset is non-negative: first output x at XP + off, xr at XQ + off + 4D; second
  // output x at XP + off + 4D, xr at XQ + off. A single output uses XQ + off + 4D as well.
  const mac = (pair: boolean, a: number, off: number): void => {
    load(FL_C, off);
    set(FL_CV);
    get(FL_A + a);
    get(FL_CV);
    load(FL_XP, off);
    load(FL_XQ, off + 4 * D);
    c.push(...simd(F32X4_ADD), ...simd(F32X4_MUL), ...simd(F32X4_ADD));
    set(FL_A + a);
    if (!pair) return;
    get(FL_B + a);
    get(FL_CV);
    load(FL_XP, off + 4 * D);
    load(FL_XQ, off);
    c.push(...simd(F32X4_ADD), ...simd(F32X4_MUL), ...simd(F32X4_ADD));
    set(FL_B + a);
  };
  const reduceStore = (acc: number): void => {
    get(acc);
    get(acc + 1);
    c.push(...simd(F32X4_ADD));
    set(FL_S);
    for (const [x, y] of [[0, 1], [2, 3]] as const) {
      get(FL_S);
      c.push(...simd(F32X4_EXTRACT), x);
      get(FL_S);
      c.push(...simd(F32X4_EXTRACT), y, op.f32Add);
    }
    c.push(op.f32Add, op.f32Store, 2, 0);
  };
  const dot = (pair: boolean): void => {
    get(FL_ROW);
    c.push(op.tee, FL_C);
    get(F_TAPS);
    shl2();
    c.push(op.i32Add);
    set(FL_END);
    get(FL_XB);
    set(FL_XP);
    get(FL_XRB);
    i32(4 * D);
    c.push(op.i32Sub);
    set(FL_XQ);
    for (let a = 0; a < 2; a++) {
      for (const base of pair ? [FL_A, FL_B] : [FL_A]) {
        c.push(...simd(V128_CONST), ...new Array<number>(16).fill(0));
        set(base + a);
      }
    }
    const bump = (by: number): void => {
      addTo(FL_C, by);
      addTo(FL_XP, by);
      addTo(FL_XQ, by);
    };
    // 8 taps per iteration: V8 schedules every load of an iteration first, and the 10 of a
    // pair (2 coefficient, 8 input vectors) plus the 4 accumulators still fit in registers;
    // 16 taps per iteration spill them (measured slower than not folding).
    // taps = 8·q + 4·t: q iterations of 8, then a 4-tap tail into accumulator 0 (the scalar
    // twin's block order: 4-tap block b goes to accumulator b mod 2, blocks in order).
    get(FL_END);
    get(F_TAPS);
    i32(4);
    c.push(op.i32And);
    shl2();
    c.push(op.i32Sub);
    set(FL_END);
    c.push(op.block, op.void);
    get(FL_C);
    get(FL_END);
    c.push(op.i32GeU, op.brIf, 0);
    c.push(op.loop, op.void);
    mac(pair, 0, 0);
    mac(pair, 1, 16);
    bump(32);
    get(FL_C);
    get(FL_END);
    c.push(op.i32LtU, op.brIf, 0);
    c.push(op.end, op.end);
    get(F_TAPS);
    i32(4);
    c.push(op.i32And, op.if, op.void);
    mac(pair, 0, 0);
    c.push(op.end);
    get(FL_OP);
    reduceStore(FL_A);
    if (pair) {
      get(FL_OP);
      get(F_UP);
      shl2();
      c.push(op.i32Add);
      reduceStore(FL_B);
    }
  };
  // A wide pair (D = 1 or 2): outputs G = 4/D same-phase steps apart, whose inputs are one
  // vector (16 bytes) apart, so the second output's block b reads the first's block b + 1 of x
  // and its block b − 1 of the reversed copy: 6 input loads per 8 taps instead of 8. `g`: the
  // pair's place in a group of 2G outputs (k + g·L and k + (g + G)·L). Same arithmetic as `mac`.
  const G = 4 / D;
  const dotWide = (g: number): void => {
    get(FL_ROW);
    c.push(op.tee, FL_C);
    get(F_TAPS);
    shl2();
    c.push(op.i32Add);
    get(F_TAPS);
    i32(4);
    c.push(op.i32And);
    shl2();
    c.push(op.i32Sub);
    set(FL_END);
    get(FL_XB);
    if (g > 0) {
      i32(g * D * 4);
      c.push(op.i32Add);
    }
    set(FL_XP);
    get(FL_XRB);
    i32(g * D * 4 + 16);
    c.push(op.i32Sub);
    set(FL_XQ);
    for (const l of [FL_A, FL_A + 1, FL_B, FL_B + 1]) {
      c.push(...simd(V128_CONST), ...new Array<number>(16).fill(0));
      set(l);
    }
    // acc += cv·(x + xr), as `mac`
    const macv = (acc: number, x: () => void, xr: () => void): void => {
      get(acc);
      get(FL_CV);
      x();
      xr();
      c.push(...simd(F32X4_ADD), ...simd(F32X4_MUL), ...simd(F32X4_ADD));
      set(acc);
    };
    const ld = (p: number, off: number) => (): void => load(p, off);
    const teeLd = (p: number, off: number, l: number) => (): void => {
      load(p, off);
      c.push(op.tee, l);
    };
    c.push(op.block, op.void);
    get(FL_C);
    get(FL_END);
    c.push(op.i32GeU, op.brIf, 0);
    c.push(op.loop, op.void);
    load(FL_C, 0);
    set(FL_CV);
    macv(FL_A, ld(FL_XP, 0), teeLd(FL_XQ, 16, FL_R1));
    macv(FL_B, teeLd(FL_XP, 16, FL_X1), ld(FL_XQ, 0));
    load(FL_C, 16);
    set(FL_CV);
    macv(FL_A + 1, () => get(FL_X1), ld(FL_XQ, 32));
    macv(FL_B + 1, ld(FL_XP, 32), () => get(FL_R1));
    for (const l of [FL_C, FL_XP, FL_XQ]) addTo(l, 32);
    get(FL_C);
    get(FL_END);
    c.push(op.i32LtU, op.brIf, 0);
    c.push(op.end, op.end);
    get(F_TAPS);
    i32(4);
    c.push(op.i32And, op.if, op.void);
    load(FL_C, 0);
    set(FL_CV);
    macv(FL_A, ld(FL_XP, 0), ld(FL_XQ, 16));
    macv(FL_B, ld(FL_XP, 16), ld(FL_XQ, 0));
    c.push(op.end);
    for (const [acc, at] of [[FL_A, g], [FL_B, g + G]] as const) {
      get(FL_OP);
      if (at > 0) {
        get(F_UP);
        i32(4 * at);
        c.push(op.i32Mul, op.i32Add);
      }
      reduceStore(acc);
    }
  };
  const advance = (m: number): void => {
    for (const [l, by, sh, sub] of [[FL_XB, F_DOWN, 2, false], [FL_XRB, F_DOWN, 2, true], [FL_OP, F_UP, 2, false], [FL_K, F_UP, 0, false]] as const) {
      get(l);
      get(by);
      i32(sh + Math.log2(m));
      c.push(op.i32Shl, sub ? op.i32Sub : op.i32Add);
      set(l);
    }
  };

  c.push(op.block, op.void);
  get(F_N);
  c.push(op.i32Eqz, op.brIf, 0);
  c.push(op.loop, op.void); // --- for r = 0 … min(up, n) − 1
  // row = coef + phase·taps·4; xb = x + xoff + lo; xrb = xr0 − xoff − hi; op = out + r·4; k = r
  get(F_COEF);
  get(F_PHASE);
  get(F_TAPS);
  c.push(op.i32Mul);
  shl2();
  c.push(op.i32Add);
  set(FL_ROW);
  get(F_X);
  get(FL_XOFF);
  c.push(op.i32Add);
  get(F_LOHI);
  get(F_PHASE);
  i32(3);
  c.push(op.i32Shl, op.i32Add, op.i32Load, 2, 0, op.i32Add);
  set(FL_XB);
  get(F_XR0);
  get(FL_XOFF);
  c.push(op.i32Sub);
  get(F_LOHI);
  get(F_PHASE);
  i32(3);
  c.push(op.i32Shl, op.i32Add, op.i32Load, 2, 4, op.i32Sub);
  set(FL_XRB);
  get(F_OUT);
  get(FL_R);
  shl2();
  c.push(op.i32Add);
  set(FL_OP);
  get(FL_R);
  set(FL_K);
  c.push(op.loop, op.void); // --- for k = r; k < n; k += up (or 2·up, or 2G·up)
  const wide = D === 1 || D === 2;
  if (wide) {
    get(FL_K);
    get(F_UP);
    i32(2 * G - 1);
    c.push(op.i32Mul, op.i32Add);
    get(F_N);
    c.push(op.i32LtU, op.if, op.void);
    for (let g = 0; g < G; g++) dotWide(g);
    advance(2 * G);
    c.push(op.else);
  }
  get(FL_K);
  get(F_UP);
  c.push(op.i32Add);
  get(F_N);
  c.push(op.i32LtU, op.if, op.void);
  dot(true);
  advance(2);
  c.push(op.else);
  dot(false);
  advance(1);
  c.push(op.end);
  if (wide) c.push(op.end);
  get(FL_K);
  get(F_N);
  c.push(op.i32LtU, op.brIf, 0, op.end);
  // xoff += step[phase]·4; phase = next[phase]; r += 1; while r < up && r < n
  get(FL_XOFF);
  get(F_STEP);
  get(F_PHASE);
  shl2();
  c.push(op.i32Add, op.i32Load, 2, 0);
  shl2();
  c.push(op.i32Add);
  set(FL_XOFF);
  get(F_NEXT);
  get(F_PHASE);
  shl2();
  c.push(op.i32Add, op.i32Load, 2, 0);
  set(F_PHASE);
  get(FL_R);
  i32(1);
  c.push(op.i32Add, op.tee, FL_R);
  get(F_UP);
  c.push(op.i32LtU);
  get(FL_R);
  get(F_N);
  c.push(op.i32LtU, op.i32And, op.brIf, 0);
  c.push(op.end, op.end);

  return [2, ...uleb(FL_A - FL_R), I32, ...uleb(FL_R1 - FL_A + 1), V128, ...c];
}

// Parameters and locals of `run16`.
const Q_COEF = 0;
const Q_STEP = 1;
const Q_NEXT = 2;
const Q_X = 3;
const Q_PHASE = 4;
const Q_OUT = 5;
const Q_N = 6;
const Q_UP = 7;
const Q_DOWN = 8;
const QL_R = 9;
const QL_XOFF = 10;
const QL_K = 11;
const QL_OP = 12;
const QL_ROW = 13;
const QL_XB = 14;
const QL_XP = 15;
const QL_C = 16; // c0 … c3 = 16 … 19: the phase's row, loaded once per phase
const QL_S = 20; // s0 … s3 = 20 … 23: four outputs' a0 + a1
const QL_U = 24; // u01, u23 = 24, 25

/**
 * `run16(coef, step, next, x, phase, out, n, up, down)`: `run` for rows of exactly 16 taps and
 * no unit rows (the wide stage of two-stage `'high'` designs: 44.1k → 48k in 22.05k→48k: issue 22). With a
 * row this short, `run`'s per-output work around the 8 products (zeroing, pointers, a loop,
 * the lane sums) cost as much as the products, so here the row stays in four registers for the
 * whole phase, and four outputs of a phase (k, k + L, k + 2L, k + 3L) reduce together: two
 * rounds of even/odd lane shuffles and adds give each `(l0 + l1) + (l2 + l3)`. Each output's
 * arithmetic is `run`'s: a0 = (0 + c0·x0) + c2·x2, a1 = (0 + c1·x1) + c3·x3 lane-wise, s = a0 + a1.
 */
function buildRun16(): number[] {
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  const set = (i: number): void => void c.push(op.set, i);
  const i32 = (v: number): void => void c.push(op.i32Const, ...sleb(v));
  const shl2 = (): void => void c.push(op.i32Const, 2, op.i32Shl);
  const zero = (): void => void c.push(...simd(V128_CONST), ...new Array<number>(16).fill(0));
  // s = a0 + a1 of the output whose first tap is at local QL_XP; leaves it on the stack.
  const dot16 = (): void => {
    for (const [first, second] of [[0, 2], [1, 3]] as const) {
      zero();
      get(QL_C + first);
      get(QL_XP);
      c.push(...simd(V128_LOAD), 2, ...uleb(16 * first), ...simd(F32X4_MUL), ...simd(F32X4_ADD));
      get(QL_C + second);
      get(QL_XP);
      c.push(...simd(V128_LOAD), 2, ...uleb(16 * second), ...simd(F32X4_MUL), ...simd(F32X4_ADD));
    }
    c.push(...simd(F32X4_ADD));
  };
  const EVEN = [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27];
  const ODD = [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31];
  // [a.0 + a.1, a.2 + a.3, b.0 + b.1, b.2 + b.3]
  const pairSums = (a: number, b: number): void => {
    get(a);
    get(b);
    c.push(...simd(I8X16_SHUFFLE), ...EVEN);
    get(a);
    get(b);
    c.push(...simd(I8X16_SHUFFLE), ...ODD, ...simd(F32X4_ADD));
  };

  c.push(op.block, op.void);
  get(Q_N);
  c.push(op.i32Eqz, op.brIf, 0);
  c.push(op.loop, op.void); // --- for r = 0 … min(up, n) − 1
  get(Q_COEF);
  get(Q_PHASE);
  i32(6);
  c.push(op.i32Shl, op.i32Add);
  set(QL_ROW);
  for (let i = 0; i < 4; i++) {
    get(QL_ROW);
    c.push(...simd(V128_LOAD), 2, ...uleb(16 * i));
    set(QL_C + i);
  }
  get(Q_X);
  get(QL_XOFF);
  c.push(op.i32Add);
  set(QL_XB);
  get(Q_OUT);
  get(QL_R);
  shl2();
  c.push(op.i32Add);
  set(QL_OP);
  get(QL_R);
  set(QL_K);
  c.push(op.loop, op.void); // --- for k = r; k < n; k += 4·up (or up)
  get(QL_K);
  get(Q_UP);
  i32(3);
  c.push(op.i32Mul, op.i32Add);
  get(Q_N);
  c.push(op.i32LtU, op.if, op.void);
  // Four outputs: k, k + L, k + 2L, k + 3L, their first taps `down` inputs apart.
  for (let i = 0; i < 4; i++) {
    get(QL_XB);
    if (i > 0) {
      get(Q_DOWN);
      i32(4 * i);
      c.push(op.i32Mul, op.i32Add);
    }
    set(QL_XP);
    dot16();
    set(QL_S + i);
  }
  pairSums(QL_S, QL_S + 1);
  set(QL_U);
  pairSums(QL_S + 2, QL_S + 3);
  set(QL_U + 1);
  pairSums(QL_U, QL_U + 1);
  set(QL_S);
  for (let i = 0; i < 4; i++) {
    get(QL_OP);
    if (i > 0) {
      get(Q_UP);
      i32(4 * i);
      c.push(op.i32Mul, op.i32Add);
    }
    get(QL_S);
    c.push(...simd(F32X4_EXTRACT), i, op.f32Store, 2, 0);
  }
  for (const [l, by, sh] of [[QL_XB, Q_DOWN, 4], [QL_OP, Q_UP, 4], [QL_K, Q_UP, 2]] as const) {
    get(l);
    get(by);
    i32(sh);
    c.push(op.i32Shl, op.i32Add);
    set(l);
  }
  c.push(op.else);
  get(QL_XB);
  set(QL_XP);
  get(QL_OP);
  dot16();
  set(QL_S);
  for (const [x, y] of [[0, 1], [2, 3]] as const) {
    get(QL_S);
    c.push(...simd(F32X4_EXTRACT), x);
    get(QL_S);
    c.push(...simd(F32X4_EXTRACT), y, op.f32Add);
  }
  c.push(op.f32Add, op.f32Store, 2, 0);
  for (const [l, by, sh] of [[QL_XB, Q_DOWN, 2], [QL_OP, Q_UP, 2], [QL_K, Q_UP, 0]] as const) {
    get(l);
    get(by);
    i32(sh);
    c.push(op.i32Shl, op.i32Add);
    set(l);
  }
  c.push(op.end);
  get(QL_K);
  get(Q_N);
  c.push(op.i32LtU, op.brIf, 0, op.end);
  // xoff += step[phase]·4; phase = next[phase]; r += 1; while r < up && r < n
  get(QL_XOFF);
  get(Q_STEP);
  get(Q_PHASE);
  shl2();
  c.push(op.i32Add, op.i32Load, 2, 0);
  shl2();
  c.push(op.i32Add);
  set(QL_XOFF);
  get(Q_NEXT);
  get(Q_PHASE);
  shl2();
  c.push(op.i32Add, op.i32Load, 2, 0);
  set(Q_PHASE);
  get(QL_R);
  i32(1);
  c.push(op.i32Add, op.tee, QL_R);
  get(Q_UP);
  c.push(op.i32LtU);
  get(QL_R);
  get(Q_N);
  c.push(op.i32LtU, op.i32And, op.brIf, 0);
  c.push(op.end, op.end);
  return [2, ...uleb(QL_C - QL_R), I32, ...uleb(QL_U + 2 - QL_C), V128, ...c];
}

/**
 * `reverse(src, dst, n)`: `dst[i] = src[n − 1 − i]` for i < n rounded up to 4 (the slack reads
 * up to 3 floats before `src` and writes past `dst[n − 1]`; both areas allow it).
 */
function buildReverse(): number[] {
  const [SRC, DST, N] = [0, 1, 2];
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  // s = src + (n − 4)·4, stepping back 16 bytes per 4 floats.
  get(SRC);
  get(N);
  c.push(op.i32Const, 4, op.i32Sub, op.i32Const, 2, op.i32Shl, op.i32Add, op.set, SRC);
  c.push(op.block, op.void);
  get(N);
  c.push(op.i32Const, 0, op.i32GtS, op.i32Eqz, op.brIf, 0, op.loop, op.void);
  get(DST);
  get(SRC);
  c.push(...simd(V128_LOAD), 2, 0);
  get(SRC);
  c.push(...simd(V128_LOAD), 2, 0);
  c.push(...simd(I8X16_SHUFFLE), 12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
  c.push(...simd(V128_STORE), 2, 0);
  get(SRC);
  c.push(op.i32Const, 16, op.i32Sub, op.set, SRC);
  get(DST);
  c.push(op.i32Const, 16, op.i32Add, op.set, DST);
  get(N);
  c.push(op.i32Const, 4, op.i32Sub, op.tee, N, op.i32Const, 0, op.i32GtS, op.brIf, 0, op.end, op.end);
  return [0, ...c];
}

/** `gather(src, dst, n, stride)`: copies n floats from src, src + stride, … (bytes) to dst, dst + 4, … */
function buildGather(): number[] {
  const [SRC, DST, N, STRIDE] = [0, 1, 2, 3];
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  c.push(op.block, op.void);
  get(N);
  c.push(op.i32Eqz, op.brIf, 0, op.loop, op.void);
  get(DST);
  get(SRC);
  c.push(op.f32Load, 2, 0, op.f32Store, 2, 0);
  get(SRC);
  get(STRIDE);
  c.push(op.i32Add, op.set, SRC);
  get(DST);
  c.push(op.i32Const, 4, op.i32Add, op.set, DST);
  get(N);
  c.push(op.i32Const, 1, op.i32Sub, op.tee, N, op.brIf, 0, op.end, op.end);
  return [0, ...c];
}

/**
 * `combine(out, y, nb, ystride, cen, cstride, center, n)`: for each k,
 * `out[k] = (((y0[k] + y1[k]) + …) + center·cen[k·cstride])` in float32, where branch b's
 * outputs start at `y + b·ystride` (bytes).
 */
function buildCombine(): number[] {
  const [OUT, Y, NB, YSTRIDE, CEN, CSTRIDE, CENTER, N, B, ACC, YP] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  const set = (i: number): void => void c.push(op.set, i);
  const inc = (l: number, by: number | null): void => {
    get(l);
    if (by === null) get(CSTRIDE);
    else c.push(op.i32Const, ...sleb(by));
    c.push(op.i32Add);
    set(l);
  };
  c.push(op.block, op.void);
  get(N);
  c.push(op.i32Eqz, op.brIf, 0, op.loop, op.void);
  get(Y);
  c.push(op.f32Load, 2, 0);
  set(ACC);
  get(Y);
  set(YP);
  c.push(op.i32Const, 1);
  set(B);
  c.push(op.block, op.void);
  get(B);
  get(NB);
  c.push(op.i32GeU, op.brIf, 0, op.loop, op.void);
  get(ACC);
  get(YP);
  get(YSTRIDE);
  c.push(op.i32Add, op.tee, YP, op.f32Load, 2, 0, op.f32Add);
  set(ACC);
  get(B);
  c.push(op.i32Const, 1, op.i32Add, op.tee, B);
  get(NB);
  c.push(op.i32LtU, op.brIf, 0, op.end, op.end);
  get(OUT);
  get(ACC);
  get(CENTER);
  get(CEN);
  c.push(op.f32Load, 2, 0, op.f32Mul, op.f32Add, op.f32Store, 2, 0);
  inc(OUT, 4);
  inc(Y, 4);
  inc(CEN, null);
  get(N);
  c.push(op.i32Const, 1, op.i32Sub, op.tee, N, op.brIf, 0, op.end, op.end);
  return [3, 1, I32, 1, F32, 1, I32, ...c];
}

/** A v128 constant of four equal 32-bit lanes. */
function v128x4(bits: number): number[] {
  const b = [bits & 0xff, (bits >>> 8) & 0xff, (bits >>> 16) & 0xff, bits >>> 24];
  return [...simd(V128_CONST), ...b, ...b, ...b, ...b];
}

/**
 * `round16(src, dst, n)`: float32 → int16, rounded half away from zero and clamped, 8 per step
 * (n rounded up to a multiple of 8: both areas need that slack). Per lane: t = trunc(v) and
 * d = v − t are exact; r = t ± 1 when |d| ≥ 0.5 (exact); then the saturating conversion to i32
 * and the saturating narrowing to i16 clamp to [−32768, 32767] — the very rule of the JS twin
 * (NaN cannot occur: inputs are finite; ±Infinity saturates like it does there).
 */
function buildRound16(): number[] {
  const [SRC, DST, N, V] = [0, 1, 2, 3];
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  const lane = (off: number): void => {
    get(SRC);
    c.push(...simd(V128_LOAD), 2, ...uleb(off), op.tee, V);
    c.push(...simd(F32X4_TRUNC), op.tee, V + 1); // t
    get(V);
    get(V + 1);
    c.push(...simd(F32X4_SUB), ...simd(F32X4_ABS), ...v128x4(0x3f000000), ...simd(F32X4_GE)); // |v − t| ≥ 0.5
    get(V);
    c.push(...v128x4(0x80000000), ...simd(V128_AND), ...v128x4(0x3f800000), ...simd(V128_OR)); // ±1 with v's sign
    c.push(...simd(V128_AND), ...simd(F32X4_ADD), ...simd(I32X4_TRUNC_SAT_F32X4_S));
  };
  c.push(op.block, op.void);
  get(N);
  c.push(op.i32Eqz, op.brIf, 0, op.loop, op.void);
  get(DST);
  lane(0);
  lane(16);
  c.push(...simd(I16X8_NARROW_I32X4_S), ...simd(V128_STORE), 4, 0);
  get(SRC);
  c.push(op.i32Const, 32, op.i32Add, op.set, SRC);
  get(DST);
  c.push(op.i32Const, 16, op.i32Add, op.set, DST);
  get(N);
  c.push(op.i32Const, 8, op.i32Sub, op.tee, N, op.i32Const, 0, op.i32GtS, op.brIf, 0, op.end, op.end);
  return [1, 2, V128, ...c];
}

/**
 * `tame(p, n)`: in place over n floats (rounded up to 4), tiny non-zero samples (|v| < 2^-50)
 * become +0 and the rest are clamped to ±2^64 — {@link tame}'s rule, 4 per step.
 */
function buildTame(): number[] {
  const [P, N, V, A] = [0, 1, 2, 3];
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  c.push(op.block, op.void);
  get(N);
  c.push(op.i32Const, 0, op.i32GtS, op.i32Eqz, op.brIf, 0, op.loop, op.void);
  get(P);
  c.push(...simd(V128_LOAD), 2, 0, op.set, V);
  get(P);
  get(V);
  get(V);
  c.push(...simd(F32X4_ABS), op.tee, A, ...v128x4(0x26800000), ...simd(F32X4_LT)); // |v| < 2^-50
  get(A);
  c.push(...v128x4(0), ...simd(F32X4_NE), ...simd(V128_AND)); // and v ≠ 0
  c.push(...simd(V128_ANDNOT)); // → +0
  c.push(...v128x4(0xdf800000), ...simd(F32X4_MAX), ...v128x4(0x5f800000), ...simd(F32X4_MIN)); // ±2^64
  c.push(...simd(V128_STORE), 2, 0);
  get(P);
  c.push(op.i32Const, 16, op.i32Add, op.set, P);
  get(N);
  c.push(op.i32Const, 4, op.i32Sub, op.tee, N, op.i32Const, 0, op.i32GtS, op.brIf, 0, op.end, op.end);
  return [1, 2, V128, ...c];
}

/**
 * `scan(p, n) → flags`: one read-only pass over `n` floats (n rounded up to 4; the slack must
 * hold zeros): bit 0 when one is NaN or ±Infinity, bit 1 when one needs {@link buildTame}'s
 * flush or clamp (0 < |v| < 2^-50 or |v| > 2^64). Audio almost never needs taming, so the float
 * path checks and skips the taming copy in one pass (issue 22: the check and the tame pass were
 * 14 % of 48k→24k).
 */
function buildScan(): number[] {
  const [P, N, A, FIN, T] = [0, 1, 2, 3, 4];
  const c: number[] = [];
  const get = (i: number): void => void c.push(op.get, i);
  c.push(...v128x4(0xffffffff), op.set, FIN);
  c.push(...v128x4(0), op.set, T);
  c.push(op.block, op.void);
  get(N);
  c.push(op.i32Const, 0, op.i32GtS, op.i32Eqz, op.brIf, 0, op.loop, op.void);
  get(P);
  c.push(...simd(V128_LOAD), 2, 0, ...simd(F32X4_ABS), op.set, A);
  get(FIN);
  get(A);
  c.push(...v128x4(0x7f800000), ...simd(F32X4_LT), ...simd(V128_AND), op.set, FIN); // |v| < ∞: finite
  get(T);
  get(A);
  c.push(...v128x4(0x26800000), ...simd(F32X4_LT));
  get(A);
  c.push(...v128x4(0), ...simd(F32X4_GT), ...simd(V128_AND)); // 0 < |v| < 2^-50
  get(A);
  c.push(...v128x4(0x5f800000), ...simd(F32X4_GT), ...simd(V128_OR), ...simd(V128_OR), op.set, T); // or |v| > 2^64
  get(P);
  c.push(op.i32Const, 16, op.i32Add, op.set, P);
  get(N);
  c.push(op.i32Const, 4, op.i32Sub, op.tee, N, op.i32Const, 0, op.i32GtS, op.brIf, 0, op.end, op.end);
  get(FIN);
  c.push(...simd(I32X4_ALL_TRUE), op.i32Eqz);
  get(T);
  c.push(...simd(V128_ANY_TRUE), op.i32Const, 1, op.i32Shl, op.i32Or);
  return [1, 3, V128, ...c];
}

function build(): Uint8Array<ArrayBuffer> {
  const folds = Array.from({ length: FOLD_MAX_DOWN }, (_, i) => buildFold(i + 1));
  const bodies = [buildRun(), buildGather(), buildCombine(), buildRound16(), buildReverse(), buildTame(), ...folds, buildScan(), buildRun16()].map((b) => [...b, op.end]);
  const foldExports = folds.flatMap((_, i) => [...str(`fold${i + 1}`), 0x00, 6 + i]);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [
      8,
      0x60, 11, ...new Array<number>(11).fill(I32), 0,
      0x60, 4, I32, I32, I32, I32, 0,
      0x60, 8, I32, I32, I32, I32, I32, I32, F32, I32, 0,
      0x60, 3, I32, I32, I32, 0,
      0x60, 12, ...new Array<number>(12).fill(I32), 0,
      0x60, 2, I32, I32, 0,
      0x60, 2, I32, I32, 1, I32,
      0x60, 9, ...new Array<number>(9).fill(I32), 0,
    ]),
    ...section(2, [1, ...str('e'), ...str('m'), 0x02, 0x00, 0x01]),
    ...section(3, [bodies.length, 0, 1, 2, 3, 3, 5, ...folds.map(() => 4), 6, 7]),
    ...section(7, [8 + folds.length, ...str('run16'), 0x00, 7 + folds.length, ...str('scan'), 0x00, 6 + folds.length, ...str('tame'), 0x00, 5, ...str('run'), 0x00, 0, ...str('gather'), 0x00, 1, ...str('combine'), 0x00, 2, ...str('round16'), 0x00, 3, ...str('reverse'), 0x00, 4, ...foldExports]),
    ...section(10, [bodies.length, ...bodies.flatMap((b) => [...uleb(b.length), ...b])]),
  ]);
}

type RunFn = (coef: number, taps: number, step: number, next: number, x: number, phase: number, out: number, n: number, up: number, down: number, copy: number) => void;
type Run16Fn = (coef: number, step: number, next: number, x: number, phase: number, out: number, n: number, up: number, down: number) => void;
type FoldFn = (coef: number, taps: number, step: number, next: number, x: number, xr0: number, phase: number, out: number, n: number, up: number, down: number, lohi: number) => void;
type TameFn = (p: number, n: number) => void;
type ScanFn = (p: number, n: number) => number;
type ReverseFn = (src: number, dst: number, n: number) => void;
type GatherFn = (src: number, dst: number, n: number, stride: number) => void;
type Round16Fn = (src: number, dst: number, n: number) => void;
type CombineFn = (out: number, y: number, nb: number, ystride: number, cen: number, cstride: number, center: number, n: number) => void;

interface Wasm {
  memory: WebAssembly.Memory;
  run: RunFn;
  run16: Run16Fn;
  gather: GatherFn;
  combine: CombineFn;
  round16: Round16Fn;
  /** `fold[D − 1]`: the fold kernel for `down = D`. */
  fold: FoldFn[];
  reverse: ReverseFn;
  tame: TameFn;
  scan: ScanFn;
  f32: Float32Array;
  i32: Int32Array;
  /** End of the phase tables (they start at 16); the scratch area follows. */
  top: number;
  tables: WeakMap<PolyphaseFilter, Tables>;
  folds: WeakMap<FoldedRows, FoldTables>;
}

function instantiate(): Wasm | null {
  try {
    if (typeof WebAssembly !== 'object') return null;
    const bytes = build();
    if (!WebAssembly.validate(bytes)) return null; // no SIMD in this engine
    const memory = new WebAssembly.Memory({ initial: 16 });
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { e: { m: memory } });
    const run = instance.exports['run'] as RunFn;
    const run16 = instance.exports['run16'] as Run16Fn;
    const gather = instance.exports['gather'] as GatherFn;
    const combine = instance.exports['combine'] as CombineFn;
    const round16 = instance.exports['round16'] as Round16Fn;
    const fold = Array.from({ length: FOLD_MAX_DOWN }, (_, i) => instance.exports[`fold${i + 1}`] as FoldFn);
    const reverse = instance.exports['reverse'] as ReverseFn;
    const tame = instance.exports['tame'] as TameFn;
    const scan = instance.exports['scan'] as ScanFn;
    return { memory, run, run16, gather, combine, round16, fold, reverse, tame, scan, f32: new Float32Array(memory.buffer), i32: new Int32Array(memory.buffer), top: 16, tables: new WeakMap(), folds: new WeakMap() };
  } catch {
    return null;
  }
}

const wasm = instantiate();
let useWasm = wasm !== null;

/** Which implementation of the dot-product kernel runs: `'wasm-simd'` or `'js'`. */
export type ResamplerBackend = 'wasm-simd' | 'js';

/** The kernel in use: `'wasm-simd'` where WebAssembly SIMD is available, else `'js'`. */
export function resamplerBackend(): ResamplerBackend {
  return useWasm ? 'wasm-simd' : 'js';
}

/**
 * Selects the kernel (for tests and benchmarks; both give bit-identical output). Returns the
 * backend now in use: asking for `'wasm-simd'` where it is unavailable keeps `'js'`.
 */
export function setResamplerBackend(backend: ResamplerBackend): ResamplerBackend {
  useWasm = backend === 'wasm-simd' && wasm !== null;
  return resamplerBackend();
}

function ensureBytes(w: Wasm, bytes: number): void {
  const have = w.memory.buffer.byteLength;
  if (bytes <= have) return;
  w.memory.grow(Math.ceil((bytes - have) / 65536));
  w.f32 = new Float32Array(w.memory.buffer);
  w.i32 = new Int32Array(w.memory.buffer);
}

/** Phase tables kept in wasm memory, at most; a design beyond it runs on the (identical) JS kernel. */
const MAX_TABLE_BYTES = 64 << 20;
let tableBytes = 0;

/**
 * Wasm memory is handed out in 16-byte-aligned blocks: phase tables (kept for the process),
 * resampler histories (freed when their resampler is collected, reused by size) and one scratch
 * area (outputs of a kernel call; grown, never shrunk). Memory cannot shrink, so the peak of live
 * resamplers stays reserved: about 2·(taps + chunk)·4 bytes per stage and channel.
 */
const freeBlocks = new Map<number, number[]>();

function allocBytes(w: Wasm, bytes: number): number {
  const size = (bytes + 15) & ~15;
  const reuse = freeBlocks.get(size);
  if (reuse !== undefined && reuse.length > 0) return reuse.pop()!;
  const at = w.top;
  w.top = at + size;
  ensureBytes(w, w.top);
  return at;
}

function freeBytes(addr: number, bytes: number): void {
  const size = (bytes + 15) & ~15;
  let list = freeBlocks.get(size);
  if (list === undefined) freeBlocks.set(size, (list = []));
  list.push(addr);
}

let scratchAt = 0;
let scratchBytes = 0;

/** The scratch area, at least `bytes` long (its address changes when it grows). */
function wasmScratch(w: Wasm, bytes: number): number {
  if (bytes > scratchBytes) {
    if (scratchBytes > 0) freeBytes(scratchAt, scratchBytes);
    scratchBytes = Math.max((bytes + 15) & ~15, 2 * scratchBytes);
    scratchAt = allocBytes(w, scratchBytes);
  }
  return scratchAt;
}

/**
 * Wasm memory that resampler histories may hold at once (live or awaiting their owner's
 * collection): beyond it a history is a plain Float32Array (copied in per kernel call, as
 * before issue 34). Blocks come in power-of-two sizes from 4 KB, so freed ones are reused.
 */
export const MAX_HISTORY_BYTES = 64 << 20;
let historyBytes = 0;

function historyClass(floats: number): number {
  return Math.max(4096, 2 ** Math.ceil(Math.log2(floats * 4)));
}

/**
 * A block of at least `floats` floats in wasm memory for a resampler's history, or -1 where
 * there is no wasm or {@link MAX_HISTORY_BYTES} is reached (the history is then a plain
 * Float32Array); `floats = 0` only asks whether there is wasm memory. Its float index is
 * `addr >> 2` in {@link memoryF32}. Release it with {@link freeFloats}.
 */
export function allocFloats(floats: number): number {
  if (wasm === null) return -1;
  if (floats === 0) return 0;
  const bytes = historyClass(floats);
  if (historyBytes + bytes > MAX_HISTORY_BYTES) return -1;
  historyBytes += bytes;
  return allocBytes(wasm, bytes);
}

/** Returns a block from {@link allocFloats} (of the same `floats`) for reuse. */
export function freeFloats(addr: number, floats: number): void {
  if (addr < 0 || wasm === null) return;
  const bytes = historyClass(floats);
  historyBytes -= bytes;
  freeBytes(addr, bytes);
}

/** The current view of the wasm memory (a new one after the memory grows: fetch it again after any allocation). */
export function memoryF32(): Float32Array {
  return wasm!.f32;
}

/**
 * `dst[−i] = src[i]` for i < n, in wasm memory (byte addresses; `dst` is where `src[0]` goes,
 * the rest go downwards): the fold kernel's reversed history. Up to 3 floats before `src` are read
 * and written below `dst − 4(n − 1)`, where their own reversed places are (the caller keeps 4
 * floats of padding around both areas).
 */
export function reverseInto(src: number, dst: number, n: number): void {
  if (n > 0) wasm!.reverse(src, dst - (n - 1) * 4, n);
}

/** {@link scanFloat32} over `n` floats already in wasm memory at byte `ptr` (the 3 floats after them must be zeros). */
export function scanAt(ptr: number, n: number): number {
  return wasm!.scan(ptr, n);
}

/** {@link tame} over `n` floats in wasm memory at byte `ptr`, in place (may rewrite up to 3 floats after them the same way). */
export function tameAt(ptr: number, n: number): void {
  wasm!.tame(ptr, n);
}

/** Byte addresses of a design's tables in wasm memory (`copy` is 0 when the design has none). */
interface Tables {
  coef: number;
  step: number;
  next: number;
  copy: number;
}

function tablesOf(w: Wasm, f: PolyphaseFilter): Tables | null {
  let t = w.tables.get(f);
  if (t === undefined) {
    const coefs = f.coefs!;
    const bytes = coefs.length * 4 + f.up * (f.copy === null ? 8 : 12);
    if (tableBytes + bytes > MAX_TABLE_BYTES) return null;
    tableBytes += bytes;
    const coef = allocBytes(w, bytes);
    const step = coef + coefs.length * 4;
    const next = step + f.up * 4;
    const copy = f.copy === null ? 0 : next + f.up * 4;
    w.f32.set(coefs, coef >> 2);
    w.i32.set(f.step!, step >> 2);
    w.i32.set(f.next!, next >> 2);
    if (f.copy !== null) w.i32.set(f.copy, copy >> 2);
    t = { coef, step, next, copy };
    w.tables.set(f, t);
  }
  return t;
}

/** Byte addresses of a {@link FoldedRows} in wasm memory (`lohi`: `lo·4, hi·4` by phase). */
interface FoldTables {
  coef: number;
  step: number;
  next: number;
  lohi: number;
}

function foldTablesOf(w: Wasm, f: PolyphaseFilter, fd: FoldedRows): FoldTables | null {
  let t = w.folds.get(fd);
  if (t === undefined) {
    const bytes = fd.coefs.length * 4 + f.up * 16;
    if (tableBytes + bytes > MAX_TABLE_BYTES) return null;
    tableBytes += bytes;
    const coef = allocBytes(w, bytes);
    const step = coef + fd.coefs.length * 4;
    const next = step + f.up * 4;
    const lohi = next + f.up * 4;
    w.f32.set(fd.coefs, coef >> 2);
    w.i32.set(f.step!, step >> 2);
    w.i32.set(f.next!, next >> 2);
    for (let p = 0; p < f.up; p++) {
      w.i32[(lohi >> 2) + 2 * p] = fd.lo[p]! * 4;
      w.i32[(lohi >> 2) + 2 * p + 1] = fd.hi[p]! * 4;
    }
    t = { coef, step, next, lohi };
    w.folds.set(fd, t);
  }
  return t;
}

/** Outputs per kernel call: bounds the scratch (and sets how often a phase row is reused). */
const BATCH = 8192;

/**
 * Computes `n` outputs of `f` from the history `hist`, whose frame `h0 + base` is the first tap of
 * the next output (at `phase`), writing them to `out[o], out[o + stride], …`. Returns
 * `base·up + phase` of the output after them.
 *
 * When `hist` is the wasm memory ({@link memoryF32}, fetched after the history's last
 * allocation), the kernel reads the history where it is, without a copy; a folded design then
 * also needs `xr`, the byte address where frame `h0` sits in the history's reversed copy (frame
 * `h0 + j` at `xr − 4j`; -1: none, the stretch is copied and reversed per batch). With
 * `outAt` ≥ 0 the outputs go to wasm memory from that byte address on (`out`, `o` and `stride`
 * are then ignored): a cascade's first stage writes into the second stage's history.
 */
export function runPolyphase(
  f: PolyphaseFilter,
  hist: Float32Array,
  h0: number,
  base: number,
  phase: number,
  out: Float32Array,
  o: number,
  stride: number,
  n: number,
  xr = -1,
  outAt = -1,
): number {
  if (f.fold !== null) return runFolded(f, f.fold, hist, h0, base, phase, out, o, stride, n, xr, outAt);
  const inWasm = wasm !== null && hist.buffer === wasm.memory.buffer;
  const t = useWasm ? tablesOf(wasm!, f) : null;
  if (t === null) {
    if (outAt >= 0) return runScalar(f.coefs!, f.taps, f.step!, f.next!, inWasm ? wasm!.f32 : hist, h0, base, phase, wasm!.f32, outAt >> 2, 1, n, f.copy);
    return runScalar(f.coefs!, f.taps, f.step!, f.next!, inWasm ? wasm!.f32 : hist, h0, base, phase, out, o, stride, n, f.copy);
  }
  const w = wasm!;
  const taps = f.taps;
  // Frames a batch of outputs can read: the step is at most ⌈down/up⌉ per output.
  const perOut = Math.ceil(f.down / f.up);
  const batch = Math.max(1, Math.min(BATCH, Math.floor((1 << 16) / perOut)));
  const span = inWasm ? 0 : taps + batch * perOut;
  const xPtr = wasmScratch(w, (span + batch) * 4);
  let outPtr = outAt >= 0 ? outAt : xPtr + span * 4;
  const limit = hist.length;
  while (n > 0) {
    const m = Math.min(n, batch);
    const from = h0 + base;
    const f32 = w.f32;
    let x = from * 4;
    if (!inWasm) {
      const len = Math.min(Math.floor((phase + (m - 1) * f.down) / f.up) + taps, limit - from);
      f32.set(hist.subarray(from, from + len), xPtr >> 2);
      x = xPtr;
    }
    if (taps === 16 && t.copy === 0) w.run16(t.coef, t.step, t.next, x, phase, outPtr, m, f.up, f.down);
    else w.run(t.coef, taps, t.step, t.next, x, phase, outPtr, m, f.up, f.down, t.copy);
    const total = phase + m * f.down;
    base += Math.floor(total / f.up);
    phase = total % f.up;
    const src = outPtr >> 2;
    if (outAt >= 0) {
      outPtr += m * 4;
    } else if (stride === 1) {
      out.set(f32.subarray(src, src + m), o);
      o += m;
    } else {
      for (let k = 0; k < m; k++, o += stride) out[o] = f32[src + k]!;
    }
    n -= m;
  }
  return base * f.up + phase;
}

/** {@link runPolyphase} over {@link FoldedRows}: the `fold` kernel or its JS twin {@link runFoldScalar}. */
function runFolded(f: PolyphaseFilter, fd: FoldedRows, hist: Float32Array, h0: number, base: number, phase: number, out: Float32Array, o: number, stride: number, n: number, xr: number, outAt: number): number {
  const inWasm = wasm !== null && hist.buffer === wasm.memory.buffer;
  const t = useWasm ? foldTablesOf(wasm!, f, fd) : null;
  if (t === null) {
    if (outAt >= 0) return runFoldScalar(fd, f.step!, f.next!, inWasm ? wasm!.f32 : hist, h0, base, phase, wasm!.f32, outAt >> 2, 1, n);
    return runFoldScalar(fd, f.step!, f.next!, inWasm ? wasm!.f32 : hist, h0, base, phase, out, o, stride, n);
  }
  const w = wasm!;
  const taps = f.taps;
  const perOut = Math.ceil(f.down / f.up);
  const batch = Math.max(1, Math.min(BATCH, Math.floor((1 << 16) / perOut)));
  const fold = w.fold[f.down - 1]!;
  // In place: the history and its reversed copy are read where they are; else both per batch.
  const direct = inWasm && xr >= 0;
  const span = direct ? 0 : (taps + batch * perOut + 3) & ~3;
  const xPtr = wasmScratch(w, (2 * span + batch) * 4);
  const xrPtr = xPtr + span * 4;
  let outPtr = outAt >= 0 ? outAt : xrPtr + span * 4;
  const limit = hist.length;
  while (n > 0) {
    const m = Math.min(n, batch);
    const from = h0 + base;
    const f32 = w.f32;
    if (direct) {
      fold(t.coef, fd.taps, t.step, t.next, from * 4, xr - base * 4, phase, outPtr, m, f.up, f.down, t.lohi);
    } else {
      const len = Math.min(Math.floor((phase + (m - 1) * f.down) / f.up) + taps, limit - from);
      f32.set((inWasm ? f32 : hist).subarray(from, from + len), xPtr >> 2);
      w.reverse(xPtr, xrPtr, len);
      fold(t.coef, fd.taps, t.step, t.next, xPtr, xrPtr + (len - 1) * 4, phase, outPtr, m, f.up, f.down, t.lohi);
    }
    const total = phase + m * f.down;
    base += Math.floor(total / f.up);
    phase = total % f.up;
    const src = outPtr >> 2;
    if (outAt >= 0) {
      outPtr += m * 4;
    } else if (stride === 1) {
      out.set(f32.subarray(src, src + m), o);
      o += m;
    } else {
      for (let k = 0; k < m; k++, o += stride) out[o] = f32[src + k]!;
    }
    n -= m;
  }
  return base * f.up + phase;
}

/**
 * The scalar twin of the `fold` kernel: tap i adds `g[i]·(x[lo + i] + x[hi − i])` to the same
 * partial sum as {@link runScalar}'s tap i, each sum and product rounded to float32.
 */
export function runFoldScalar(
  fd: FoldedRows,
  step: Int32Array,
  next: Int32Array,
  hist: Float32Array,
  h0: number,
  base: number,
  phase: number,
  out: Float32Array,
  o: number,
  stride: number,
  n: number,
): number {
  const up = step.length;
  const taps = fd.taps;
  const g = fd.coefs;
  for (let k = 0; k < n; k++) {
    let c = phase * taps;
    const end = c + taps;
    let x = h0 + base + fd.lo[phase]!;
    let y = h0 + base + fd.hi[phase]!;
    let a00 = 0, a01 = 0, a02 = 0, a03 = 0, a10 = 0, a11 = 0, a12 = 0, a13 = 0; // prettier-ignore
    // 4-tap block b goes to a0x (b even) or a1x (b odd), in order: 16 per step, then 8, then 4.
    const end16 = end - (taps & 12);
    for (; c < end16; c += 16, x += 16, y -= 16) {
      a00 = fr(a00 + fr(g[c]! * fr(hist[x]! + hist[y]!)));
      a01 = fr(a01 + fr(g[c + 1]! * fr(hist[x + 1]! + hist[y - 1]!)));
      a02 = fr(a02 + fr(g[c + 2]! * fr(hist[x + 2]! + hist[y - 2]!)));
      a03 = fr(a03 + fr(g[c + 3]! * fr(hist[x + 3]! + hist[y - 3]!)));
      a10 = fr(a10 + fr(g[c + 4]! * fr(hist[x + 4]! + hist[y - 4]!)));
      a11 = fr(a11 + fr(g[c + 5]! * fr(hist[x + 5]! + hist[y - 5]!)));
      a12 = fr(a12 + fr(g[c + 6]! * fr(hist[x + 6]! + hist[y - 6]!)));
      a13 = fr(a13 + fr(g[c + 7]! * fr(hist[x + 7]! + hist[y - 7]!)));
      a00 = fr(a00 + fr(g[c + 8]! * fr(hist[x + 8]! + hist[y - 8]!)));
      a01 = fr(a01 + fr(g[c + 9]! * fr(hist[x + 9]! + hist[y - 9]!)));
      a02 = fr(a02 + fr(g[c + 10]! * fr(hist[x + 10]! + hist[y - 10]!)));
      a03 = fr(a03 + fr(g[c + 11]! * fr(hist[x + 11]! + hist[y - 11]!)));
      a10 = fr(a10 + fr(g[c + 12]! * fr(hist[x + 12]! + hist[y - 12]!)));
      a11 = fr(a11 + fr(g[c + 13]! * fr(hist[x + 13]! + hist[y - 13]!)));
      a12 = fr(a12 + fr(g[c + 14]! * fr(hist[x + 14]! + hist[y - 14]!)));
      a13 = fr(a13 + fr(g[c + 15]! * fr(hist[x + 15]! + hist[y - 15]!)));
    }
    if ((taps & 8) !== 0) {
      a00 = fr(a00 + fr(g[c]! * fr(hist[x]! + hist[y]!)));
      a01 = fr(a01 + fr(g[c + 1]! * fr(hist[x + 1]! + hist[y - 1]!)));
      a02 = fr(a02 + fr(g[c + 2]! * fr(hist[x + 2]! + hist[y - 2]!)));
      a03 = fr(a03 + fr(g[c + 3]! * fr(hist[x + 3]! + hist[y - 3]!)));
      a10 = fr(a10 + fr(g[c + 4]! * fr(hist[x + 4]! + hist[y - 4]!)));
      a11 = fr(a11 + fr(g[c + 5]! * fr(hist[x + 5]! + hist[y - 5]!)));
      a12 = fr(a12 + fr(g[c + 6]! * fr(hist[x + 6]! + hist[y - 6]!)));
      a13 = fr(a13 + fr(g[c + 7]! * fr(hist[x + 7]! + hist[y - 7]!)));
      c += 8;
      x += 8;
      y -= 8;
    }
    if ((taps & 4) !== 0) {
      a00 = fr(a00 + fr(g[c]! * fr(hist[x]! + hist[y]!)));
      a01 = fr(a01 + fr(g[c + 1]! * fr(hist[x + 1]! + hist[y - 1]!)));
      a02 = fr(a02 + fr(g[c + 2]! * fr(hist[x + 2]! + hist[y - 2]!)));
      a03 = fr(a03 + fr(g[c + 3]! * fr(hist[x + 3]! + hist[y - 3]!)));
    }
    const s0 = fr(a00 + a10);
    const s1 = fr(a01 + a11);
    const s2 = fr(a02 + a12);
    const s3 = fr(a03 + a13);
    out[o] = fr(s0 + s1) + fr(s2 + s3);
    o += stride;
    base += step[phase]!;
    phase = next[phase]!;
  }
  return base * up + phase;
}

const scratch: { x: Float32Array; y: Float32Array } = { x: new Float32Array(0), y: new Float32Array(0) };

/**
 * Integer decimation (by 2 in practice) through {@link DecimatorBranches}: computes `n` outputs whose first
 * tap is at history frame `h0 + base` (outputs step by M frames), writing `out[o + k·stride]`.
 * Per batch: the stretch of history is copied in once; each branch's samples are gathered
 * (de-interleaved) and run as a FIR; `combine` adds the branch sums in order and the centre tap
 * last, in float32. The JS path performs the same steps with the same roundings.
 */
export function runDecimator(d: DecimatorBranches, M: number, taps: number, hist: Float32Array, h0: number, base: number, out: Float32Array, o: number, stride: number, n: number): void {
  const nb = d.branches.length;
  const maxTaps = d.branches.reduce((m, b) => Math.max(m, b.filter.taps), 0);
  const batch = Math.min(BATCH, n);
  const winMax = (batch - 1) * M + taps;
  if (useWasm && d.branches.every((b) => tablesOf(wasm!, b.filter) !== null)) {
    const w = wasm!;
    const inWasm = hist.buffer === w.memory.buffer;
    const win = wasmScratch(w, (winMax + maxTaps + batch + nb * batch + batch) * 4);
    const xb = win + winMax * 4;
    const y = xb + (maxTaps + batch) * 4;
    const res = y + nb * batch * 4;
    while (n > 0) {
      const m = Math.min(n, batch);
      const from = h0 + base;
      const f32 = w.f32;
      const h = inWasm ? f32 : hist; // a view fetched before the scratch grew the memory is detached
      f32.set(h.subarray(from, Math.min(h.length, from + (m - 1) * M + taps)), win >> 2);
      for (let bi = 0; bi < nb; bi++) {
        const b = d.branches[bi]!;
        f32.fill(0, xb >> 2, (xb >> 2) + b.pad);
        w.gather(win + b.first * 4, xb + b.pad * 4, m + b.count - 1, M * 4);
        const t = w.tables.get(b.filter)!;
        w.run(t.coef, b.filter.taps, t.step, t.next, xb, 0, y + bi * batch * 4, m, 1, 1, 0);
      }
      w.combine(res, y, nb, batch * 4, win + d.centerTap * 4, M * 4, d.center, m);
      const r0 = res >> 2;
      if (stride === 1) {
        out.set(f32.subarray(r0, r0 + m), o);
        o += m;
      } else {
        for (let k = 0; k < m; k++, o += stride) out[o] = f32[r0 + k]!;
      }
      base += m * M;
      n -= m;
    }
    return;
  }
  if (scratch.x.length < maxTaps + batch) scratch.x = new Float32Array(maxTaps + batch);
  if (scratch.y.length < nb * batch) scratch.y = new Float32Array(nb * batch);
  const xs = scratch.x;
  const ys = scratch.y;
  const center = d.center;
  while (n > 0) {
    const m = Math.min(n, batch);
    for (let bi = 0; bi < nb; bi++) {
      const b = d.branches[bi]!;
      xs.fill(0, 0, b.pad);
      for (let q = 0, s = h0 + base + b.first, len = m + b.count - 1; q < len; q++, s += M) xs[b.pad + q] = hist[s]!;
      runScalar(b.filter.coefs!, b.filter.taps, b.filter.step!, b.filter.next!, xs, 0, 0, 0, ys, bi * batch, 1, m);
    }
    for (let k = 0, c = h0 + base + d.centerTap; k < m; k++, o += stride, c += M) {
      let acc = ys[k]!;
      for (let bi = 1; bi < nb; bi++) acc = fr(acc + ys[bi * batch + k]!);
      out[o] = acc + fr(center * hist[c]!);
    }
    base += m * M;
    n -= m;
  }
}

const fr = Math.fround;

/**
 * The scalar twin of the wasm kernel: the same float32 products, the same 8 partial sums in the
 * same order, the same final reduction, so the output is bit-identical.
 */
export function runScalar(
  coefs: Float32Array,
  taps: number,
  step: Int32Array,
  next: Int32Array,
  hist: Float32Array,
  h0: number,
  base: number,
  phase: number,
  out: Float32Array,
  o: number,
  stride: number,
  n: number,
  copy: Int32Array | null = null,
): number {
  const up = step.length;
  for (let k = 0; k < n; k++) {
    if (copy !== null && copy[phase] !== 0) {
      out[o] = hist[h0 + base + copy[phase]! - 1]!;
      o += stride;
      base += step[phase]!;
      phase = next[phase]!;
      continue;
    }
    let c = phase * taps;
    const end = c + taps;
    let x = h0 + base;
    let a00 = 0, a01 = 0, a02 = 0, a03 = 0, a10 = 0, a11 = 0, a12 = 0, a13 = 0; // prettier-ignore
    if ((taps & 8) !== 0) {
      a00 = fr(a00 + fr(coefs[c]! * hist[x]!));
      a01 = fr(a01 + fr(coefs[c + 1]! * hist[x + 1]!));
      a02 = fr(a02 + fr(coefs[c + 2]! * hist[x + 2]!));
      a03 = fr(a03 + fr(coefs[c + 3]! * hist[x + 3]!));
      a10 = fr(a10 + fr(coefs[c + 4]! * hist[x + 4]!));
      a11 = fr(a11 + fr(coefs[c + 5]! * hist[x + 5]!));
      a12 = fr(a12 + fr(coefs[c + 6]! * hist[x + 6]!));
      a13 = fr(a13 + fr(coefs[c + 7]! * hist[x + 7]!));
      c += 8;
      x += 8;
    }
    for (; c < end; c += 16, x += 16) {
      a00 = fr(a00 + fr(coefs[c]! * hist[x]!));
      a01 = fr(a01 + fr(coefs[c + 1]! * hist[x + 1]!));
      a02 = fr(a02 + fr(coefs[c + 2]! * hist[x + 2]!));
      a03 = fr(a03 + fr(coefs[c + 3]! * hist[x + 3]!));
      a10 = fr(a10 + fr(coefs[c + 4]! * hist[x + 4]!));
      a11 = fr(a11 + fr(coefs[c + 5]! * hist[x + 5]!));
      a12 = fr(a12 + fr(coefs[c + 6]! * hist[x + 6]!));
      a13 = fr(a13 + fr(coefs[c + 7]! * hist[x + 7]!));
      a00 = fr(a00 + fr(coefs[c + 8]! * hist[x + 8]!));
      a01 = fr(a01 + fr(coefs[c + 9]! * hist[x + 9]!));
      a02 = fr(a02 + fr(coefs[c + 10]! * hist[x + 10]!));
      a03 = fr(a03 + fr(coefs[c + 11]! * hist[x + 11]!));
      a10 = fr(a10 + fr(coefs[c + 12]! * hist[x + 12]!));
      a11 = fr(a11 + fr(coefs[c + 13]! * hist[x + 13]!));
      a12 = fr(a12 + fr(coefs[c + 14]! * hist[x + 14]!));
      a13 = fr(a13 + fr(coefs[c + 15]! * hist[x + 15]!));
    }
    const s0 = fr(a00 + a10);
    const s1 = fr(a01 + a11);
    const s2 = fr(a02 + a12);
    const s3 = fr(a03 + a13);
    out[o] = fr(s0 + s1) + fr(s2 + s3);
    o += stride;
    base += step[phase]!;
    phase = next[phase]!;
  }
  return base * up + phase;
}

/** Values per wasm call of {@link roundToInt16} (bounds its scratch). */
const ROUND_BATCH = 16384;

/**
 * Float → int16 for the Int16 paths (values already on the int16 scale): rounds half away from
 * zero (the rule of pcm.ts) and clamps to [−32768, 32767], writing `dst[0 … n)`. The wasm
 * `round16` and the JS loop below give identical results for every finite float32 and ±Infinity.
 */
export function roundToInt16(src: Float32Array, n: number, dst: Int16Array): void {
  if (!useWasm || n < 64) {
    for (let i = 0; i < n; i++) {
      const v = src[i]!;
      dst[i] = v >= 32766.5 ? 32767 : v <= -32767.5 ? -32768 : v < 0 ? (v - 0.5) | 0 : (v + 0.5) | 0;
    }
    return;
  }
  const w = wasm!;
  const inPtr = wasmScratch(w, ROUND_BATCH * 6 + 16);
  const outPtr = inPtr + ROUND_BATCH * 4;
  for (let at = 0; at < n; at += ROUND_BATCH) {
    const m = Math.min(ROUND_BATCH, n - at);
    w.f32.set(src.subarray(at, at + m), inPtr >> 2);
    w.round16(inPtr, outPtr, m);
    dst.set(new Int16Array(w.memory.buffer, outPtr, m), at);
  }
}

/** Input samples below this magnitude are read as 0 (see resampler.ts `RESAMPLER_FLUSH_BELOW`). */
export const FLUSH_BELOW = 2 ** -50;
/** Input samples are clamped to ±this (see resampler.ts `RESAMPLER_CLAMP_ABOVE`). */
export const CLAMP_ABOVE = 2 ** 64;

/**
 * Flushes tiny and clamps huge samples of `h[from … to)` in place ({@link FLUSH_BELOW},
 * {@link CLAMP_ABOVE}; ±0 stay as they are, tiny non-zero samples become +0). The wasm `tame`
 * and the JS loop give identical results. The JS loop tests |v| so the usual sample takes no
 * branch that depends on its sign (testing v against both ± bounds mispredicted on every sign
 * change: 6 ns a sample, more than the filter); the wasm runs 4 samples per step (0.3 ns).
 */
export function tame(h: Float32Array, from: number, to: number): void {
  if (!useWasm || to - from < 64) {
    for (let i = from; i < to; i++) {
      const v = h[i]!;
      const a = Math.abs(v);
      if (a < FLUSH_BELOW) {
        if (v !== 0) h[i] = 0;
      } else if (a > CLAMP_ABOVE) {
        h[i] = v > 0 ? CLAMP_ABOVE : -CLAMP_ABOVE;
      }
    }
    return;
  }
  const w = wasm!;
  const ptr = wasmScratch(w, ROUND_BATCH * 4 + 16);
  for (let at = from; at < to; at += ROUND_BATCH) {
    const m = Math.min(ROUND_BATCH, to - at);
    const f32 = w.f32;
    f32.set(h.subarray(at, at + m), ptr >> 2);
    w.tame(ptr, m);
    h.set(f32.subarray(ptr >> 2, (ptr >> 2) + m), at);
  }
}

/** {@link scanFloat32}'s flag: a sample is NaN or ±Infinity. */
export const SCAN_NON_FINITE = 1;
/** {@link scanFloat32}'s flag: a sample needs {@link tame} (always set by the JS path). */
export const SCAN_NEEDS_TAME = 2;

/**
 * Checks float input in one pass: {@link SCAN_NON_FINITE} when a sample is NaN or ±Infinity,
 * {@link SCAN_NEEDS_TAME} when one needs {@link tame} (the JS path always reports it: its tame
 * loop is its own check). Read-only.
 */
export function scanFloat32(x: Float32Array): number {
  const n = x.length;
  if (!useWasm || n < 64) {
    // The sum of finite float32 values is finite (it cannot overflow a double); any NaN or
    // ±Infinity makes it NaN or infinite. Four sums break the add dependency chain.
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    const n4 = n & ~3;
    let i = 0;
    for (; i < n4; i += 4) {
      s0 += x[i]!;
      s1 += x[i + 1]!;
      s2 += x[i + 2]!;
      s3 += x[i + 3]!;
    }
    for (; i < n; i++) s0 += x[i]!;
    return (Number.isFinite(s0 + s1 + s2 + s3) ? 0 : SCAN_NON_FINITE) | SCAN_NEEDS_TAME;
  }
  const w = wasm!;
  const ptr = wasmScratch(w, ROUND_BATCH * 4 + 16);
  let flags = 0;
  for (let at = 0; at < n; at += ROUND_BATCH) {
    const m = Math.min(ROUND_BATCH, n - at);
    const f32 = w.f32;
    f32.set(x.subarray(at, at + m), ptr >> 2);
    f32.fill(0, (ptr >> 2) + m, (ptr >> 2) + ((m + 3) & ~3));
    flags |= w.scan(ptr, m);
  }
  return flags;
}
