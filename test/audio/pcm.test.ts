/**
 * PCM conversions against (a) naive references written here (DataView readers, Math.round-style
 * rules, plain averages), (b) ffmpeg's own conversions of the same raw bytes (s16/s24/s32/f32 →
 * f32le and → s16le, s16 → s24/s32), and (c) the spec's clamp rule for float → int16
 * (protocol-notes: scale by 32767 and clamp; +1.0 must not wrap).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  decodePcm,
  decodePcmToInt16,
  downmixInt16ToMono,
  downmixToMono,
  encodePcm,
  float32ToInt16,
  int16ToFloat32,
  isPcmEncoding,
  pcmBytesPerSample,
  PCM_ENCODINGS,
  type PcmEncoding,
} from '../../src/audio/pcm.js';
import { VoicewireError } from '../../src/util/errors.js';
import { has, needs, run } from '../helpers/tools.js';
import { expectCode } from '../helpers/errors.js';

// ---------------------------------------------------------------------------------------------
// Naive references
// ---------------------------------------------------------------------------------------------

/** Round half away from zero, then clamp; NaN → 0. One sample, no tricks. */
function naiveFloatToInt(x: number, max: number): number {
  if (Number.isNaN(x)) return 0;
  const v = x * max;
  const r = Math.sign(v) * Math.floor(Math.abs(v) + 0.5);
  return Math.min(max, Math.max(-max - 1, r)) + 0; // + 0 turns -0 into 0
}

/** Reads sample i with a DataView, as an integer (or float for f32le). */
function naiveRead(bytes: Uint8Array, enc: PcmEncoding, i: number): number {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (enc) {
    case 's16le':
      return v.getInt16(i * 2, true);
    case 's24le': {
      const u = v.getUint8(i * 3) + v.getUint8(i * 3 + 1) * 256 + v.getUint8(i * 3 + 2) * 65536;
      return u >= 8388608 ? u - 16777216 : u;
    }
    case 's32le':
      return v.getInt32(i * 4, true);
    case 'f32le':
      return v.getFloat32(i * 4, true);
  }
}

const FULL_SCALE: Record<PcmEncoding, number> = { s16le: 32768, s24le: 8388608, s32le: 2147483648, f32le: 1 };

function naiveDecodeFloat(bytes: Uint8Array, enc: PcmEncoding): Float32Array {
  const n = bytes.byteLength / pcmBytesPerSample(enc);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = naiveRead(bytes, enc, i) / FULL_SCALE[enc];
  return out;
}

function naiveDecodeInt16(bytes: Uint8Array, enc: PcmEncoding): Int16Array {
  const n = bytes.byteLength / pcmBytesPerSample(enc);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const x = naiveRead(bytes, enc, i);
    out[i] = enc === 'f32le' ? naiveFloatToInt(x, 32767) : Math.floor(x / (FULL_SCALE[enc] / 32768));
  }
  return out;
}

/** Deterministic pseudo-random bytes (xorshift), so failures reproduce. */
function randomBytes(n: number, seed = 12345): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = s & 0xff;
  }
  return out;
}

/** Finite floats in [-1.5, 1.5] as f32le bytes (random bytes would hold NaNs and huge values). */
function randomFloatBytes(n: number): Uint8Array {
  const f = new Float32Array(n);
  const r = randomBytes(n * 2, 999);
  for (let i = 0; i < n; i++) f[i] = ((r[2 * i]! * 256 + r[2 * i + 1]!) / 65535) * 3 - 1.5;
  return new Uint8Array(f.buffer);
}


type Samples = Uint8Array | Int16Array | Float32Array;
/** Element-wise equality that stays fast on 64 K elements; shows a small diff at the first mismatch. */
function expectSame(got: Samples, want: Samples): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const a = got[i]!;
    const b = want[i]!;
    if (a !== b && !(Number.isNaN(a) && Number.isNaN(b))) {
      expect({ at: i, got: Array.from(got.subarray(i, i + 6)) }).toEqual({ at: i, got: Array.from(want.subarray(i, i + 6)) });
    }
  }
}

/** A copy of `bytes` starting at an odd byteOffset of a bigger buffer. */
function atOddOffset(bytes: Uint8Array): Uint8Array {
  const big = new Uint8Array(bytes.byteLength + 3);
  big.set(bytes, 1);
  return big.subarray(1, 1 + bytes.byteLength);
}

const ALL_INT16 = (() => {
  const a = new Int16Array(65536);
  for (let i = 0; i < 65536; i++) a[i] = i - 32768;
  return a;
})();

// ---------------------------------------------------------------------------------------------

describe('int16ToFloat32 / float32ToInt16', () => {
  it('int16ToFloat32 divides by 32768 for all 65,536 values', () => {
    const f = int16ToFloat32(ALL_INT16);
    for (let i = 0; i < 65536; i++) if (f[i] !== ALL_INT16[i]! / 32768) expect(f[i]).toBe(ALL_INT16[i]! / 32768);
    expect(f[0]).toBe(-1);
    expect(f[65535]).toBe(32767 / 32768);
  });

  it('float32ToInt16: +1.0 → 32767 (never wraps), -1.0 → -32767, clamps beyond, NaN → 0', () => {
    const src = new Float32Array([1, -1, 0, -0, 1.5, -1.5, 1e30, -1e30, Infinity, -Infinity, NaN, 0.6 / 32767, -0.6 / 32767, 1.4 / 32767, 0.4 / 32767]);
    expect(Array.from(float32ToInt16(src))).toEqual([32767, -32767, 0, 0, 32767, -32768, 32767, -32768, 32767, -32768, 0, 1, -1, 1, 0]);
  });

  it('float32ToInt16 matches the naive scale-round-clamp rule on random floats (fast-check)', () => {
    fc.assert(
      fc.property(fc.float32Array({ maxLength: 300 }), (arr) => {
        const got = float32ToInt16(arr);
        for (let i = 0; i < arr.length; i++) if (got[i] !== naiveFloatToInt(arr[i]!, 32767)) return false;
        return true;
      }),
      { numRuns: 200 },
    );
  });

  it('float32ToInt16 inverts k/32767 for every int16 k in [-32767, 32767]', () => {
    const f = new Float32Array(65535);
    for (let k = -32767; k <= 32767; k++) f[k + 32767] = k / 32767;
    const back = float32ToInt16(f);
    for (let k = -32767; k <= 32767; k++) if (back[k + 32767] !== k) expect(back[k + 32767]).toBe(k);
  });

  it('writes into a preallocated out and returns a view of the used part', () => {
    const out = new Int16Array(10).fill(7);
    const r = float32ToInt16(new Float32Array([0.5, -0.5]), out);
    expect(r.buffer).toBe(out.buffer);
    expect(Array.from(r)).toEqual([16384, -16384]);
    expect(out[2]).toBe(7);
    const fo = new Float32Array(2);
    expect(int16ToFloat32(new Int16Array([16384, -32768]), fo)).toBe(fo);
    expect(Array.from(fo)).toEqual([0.5, -1]);
  });

  it('rejects a too-small out and wrong types with INVALID_ARGUMENT', () => {
    expectCode(() => float32ToInt16(new Float32Array(3), new Int16Array(2)), 'INVALID_ARGUMENT', /out holds 2 elements, 3 needed/);
    expectCode(() => int16ToFloat32(new Float32Array(3) as never), 'INVALID_ARGUMENT', /Int16Array/);
    expectCode(() => float32ToInt16([1, 2] as never), 'INVALID_ARGUMENT', /Float32Array/);
  });
});

describe('decodePcm / decodePcmToInt16 (naive DataView reference)', () => {
  for (const enc of PCM_ENCODINGS) {
    const size = pcmBytesPerSample(enc);
    const bytes = enc === 'f32le' ? randomFloatBytes(2001) : randomBytes(2001 * size, size);
    it(`${enc}: float and int16 decode equal the naive readers`, () => {
      expectSame(decodePcm(bytes, enc), naiveDecodeFloat(bytes, enc));
      expectSame(decodePcmToInt16(bytes, enc), naiveDecodeInt16(bytes, enc));
    });
    it(`${enc}: an odd byteOffset works (copy, no RangeError) and gives the same samples`, () => {
      const odd = atOddOffset(bytes);
      expect(odd.byteOffset % 2).toBe(1);
      expectSame(decodePcm(odd, enc), decodePcm(bytes, enc));
      expectSame(decodePcmToInt16(odd, enc), decodePcmToInt16(bytes, enc));
      const buf = Buffer.from(odd.buffer, odd.byteOffset, odd.byteLength); // a pooled-Buffer shape
      expectSame(decodePcm(buf, enc), decodePcm(bytes, enc));
    });
    it(`${enc}: a length that is not whole samples is PCM_PARTIAL_SAMPLE`, () => {
      expectCode(() => decodePcm(bytes.subarray(0, size + 1), enc), 'PCM_PARTIAL_SAMPLE', new RegExp(`${size + 1} bytes`));
      expectCode(() => decodePcmToInt16(bytes.subarray(0, size * 3 - 1), enc), 'PCM_PARTIAL_SAMPLE');
    });
  }

  it('returns fresh arrays, never views of the input', () => {
    const bytes = randomBytes(64);
    const f = decodePcm(bytes, 'f32le');
    const i = decodePcmToInt16(bytes, 's16le');
    expect(f.buffer).not.toBe(bytes.buffer);
    expect(i.buffer).not.toBe(bytes.buffer);
  });

  it('unknown encodings are PCM_UNSUPPORTED_ENCODING', () => {
    expectCode(() => decodePcm(new Uint8Array(4), 'u8' as never), 'PCM_UNSUPPORTED_ENCODING', /s16le, s24le, s32le, f32le/);
    expectCode(() => decodePcmToInt16(new Uint8Array(4), 'toString' as never), 'PCM_UNSUPPORTED_ENCODING');
    expectCode(() => encodePcm(new Int16Array(2), 'f64le' as never), 'PCM_UNSUPPORTED_ENCODING');
    expect(isPcmEncoding('s24le')).toBe(true);
    expect(isPcmEncoding('constructor')).toBe(false);
  });

  describe.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'agrees with ffmpeg on the same raw bytes'), () => {
    for (const enc of ['s16le', 's24le', 's32le'] as const) {
      it(`${enc} → f32le and → s16le`, () => {
        const bytes = randomBytes(1500 * pcmBytesPerSample(enc), 77);
        const args = ['-v', 'error', '-f', enc, '-ar', '8000', '-ac', '1', '-i', '-'];
        const f = run('ffmpeg', [...args, '-f', 'f32le', '-c:a', 'pcm_f32le', '-'], bytes);
        const s = run('ffmpeg', [...args, '-f', 's16le', '-c:a', 'pcm_s16le', '-'], bytes);
        expectSame(decodePcm(bytes, enc), new Float32Array(new Uint8Array(f).buffer));
        expectSame(decodePcmToInt16(bytes, enc), new Int16Array(new Uint8Array(s).buffer));
      });
    }
    it('f32le decodes to ffmpeg\'s own float samples', () => {
      const bytes = randomFloatBytes(1500);
      const f = run('ffmpeg', ['-v', 'error', '-f', 'f32le', '-ar', '8000', '-ac', '1', '-i', '-', '-f', 'f32le', '-c:a', 'pcm_f32le', '-'], bytes);
      expectSame(decodePcm(bytes, 'f32le'), new Float32Array(new Uint8Array(f).buffer));
    });
    for (const enc of ['s24le', 's32le', 'f32le'] as const) {
      it(`Int16 → ${enc} equals ffmpeg's s16 → ${enc}`, () => {
        const s16 = new Uint8Array(ALL_INT16.buffer);
        const want = run('ffmpeg', ['-v', 'error', '-f', 's16le', '-ar', '8000', '-ac', '1', '-i', '-', '-f', enc, '-c:a', `pcm_${enc}`, '-'], s16);
        expectSame(encodePcm(ALL_INT16, enc), new Uint8Array(want));
      });
    }
  });
});

describe('encodePcm', () => {
  it('Int16 input round-trips exactly through every encoding (all 65,536 values)', () => {
    for (const enc of PCM_ENCODINGS) {
      if (enc !== 'f32le') expectSame(decodePcmToInt16(encodePcm(ALL_INT16, enc), enc), ALL_INT16);
      expectSame(decodePcm(encodePcm(ALL_INT16, enc), enc), int16ToFloat32(ALL_INT16));
    }
  });

  it('Float32 input: integer encodings scale by 2^(bits-1)-1, round half away, clamp (naive reference)', () => {
    fc.assert(
      fc.property(fc.float32Array({ maxLength: 200, noDefaultInfinity: false }), (arr) => {
        for (const enc of ['s16le', 's24le', 's32le'] as const) {
          const bytes = encodePcm(arr, enc);
          const max = FULL_SCALE[enc] - 1;
          for (let i = 0; i < arr.length; i++) if (naiveRead(bytes, enc, i) !== naiveFloatToInt(arr[i]!, max)) return false;
        }
        const f = encodePcm(arr, 'f32le');
        return new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength).every((b, i) => b === f[i]);
      }),
      { numRuns: 100 },
    );
  });

  it('writes into an out at an odd byteOffset', () => {
    const src = new Float32Array([0.25, -1, 1]);
    for (const enc of PCM_ENCODINGS) {
      const want = encodePcm(src, enc);
      const big = new Uint8Array(want.length + 5);
      const got = encodePcm(src, enc, big.subarray(1));
      expect(got.byteOffset).toBe(1);
      expect(got).toEqual(want);
      const wantI = encodePcm(new Int16Array([5, -5, 32767]), enc);
      expect(encodePcm(new Int16Array([5, -5, 32767]), enc, big.subarray(1))).toEqual(wantI);
    }
  });

  it('accepts samples whose own byteOffset is odd-aligned for the output', () => {
    const f = new Float32Array(8).fill(0.5).subarray(1, 5);
    expect(decodePcm(encodePcm(f, 'f32le'), 'f32le')).toEqual(f);
  });
});

describe('downmix', () => {
  const naiveFloat = (x: Float32Array, ch: number): Float32Array => {
    const out = new Float32Array(x.length / ch);
    for (let i = 0; i < out.length; i++) {
      let s = 0;
      for (let c = 0; c < ch; c++) s += x[i * ch + c]!;
      out[i] = s / ch;
    }
    return out;
  };
  const naiveInt = (x: Int16Array, ch: number): Int16Array => {
    const out = new Int16Array(x.length / ch);
    for (let i = 0; i < out.length; i++) {
      let s = 0;
      for (let c = 0; c < ch; c++) s += x[i * ch + c]!;
      out[i] = Math.round(s / ch);
    }
    return out;
  };

  it('averages the channels (1 to 8 channels, fast-check)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.integer({ min: -32768, max: 32767 }), { maxLength: 240 }), (ch, xs) => {
        const n = xs.length - (xs.length % ch);
        const i16 = Int16Array.from(xs.slice(0, n));
        const f32 = int16ToFloat32(i16);
        expect(downmixToMono(f32, ch)).toEqual(naiveFloat(f32, ch));
        expect(downmixInt16ToMono(i16, ch)).toEqual(naiveInt(i16, ch));
      }),
      { numRuns: 200 },
    );
  });

  it('stereo examples: (L+R)/2, int16 ties round toward +∞, extremes stay in range', () => {
    expect(Array.from(downmixToMono(new Float32Array([1, 0, -1, -1, 0.5, 0.25]), 2))).toEqual([0.5, -1, 0.375]);
    expect(Array.from(downmixInt16ToMono(new Int16Array([1, 2, -1, -2, 32767, 32767, -32768, -32768, 32767, -32768]), 2))).toEqual([2, -1, 32767, -32768, 0]);
  });

  it('a length that is not whole frames is PCM_PARTIAL_SAMPLE; bad channels INVALID_ARGUMENT', () => {
    expectCode(() => downmixToMono(new Float32Array(5), 2), 'PCM_PARTIAL_SAMPLE', /5 samples/);
    expectCode(() => downmixInt16ToMono(new Int16Array(7), 3), 'PCM_PARTIAL_SAMPLE');
    expectCode(() => downmixToMono(new Float32Array(4), 0), 'INVALID_ARGUMENT');
    expectCode(() => downmixInt16ToMono(new Int16Array(4), 1.5), 'INVALID_ARGUMENT');
  });
});
