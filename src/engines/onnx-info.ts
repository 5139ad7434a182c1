/**
 * What a model folder's ONNX file says about itself, read without an ONNX runtime: its
 * `metadata_props` (sherpa-onnx picks a model family and its settings from them: `comment`,
 * `model_type`, `sample_rate`, `vocab_size`, …) and its graph's input and output names.
 *
 * The file is walked as protobuf (onnx.proto: ModelProto field 7 graph, 14 metadata_props;
 * GraphProto field 11 input, 12 output; ValueInfoProto and StringStringEntryProto field 1 name /
 * key, 2 value; ValueInfoProto field 2 type → TypeProto 1 tensor_type → 2 shape → 1 dim →
 * 1 dim_value / 2 dim_param) with positional reads, skipping the weights, so a 1 GB model costs a few reads. A
 * field that runs past the end of the file means the file is truncated or not ONNX: sherpa-onnx
 * would end the process on it.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

/** A tensor's declared shape: a number per fixed dimension, its name (or `?`) per free one; `null` when the rank is not declared. */
export type OnnxShape = Array<number | string> | null;

/** The metadata and graph signature of one ONNX file. */
export interface OnnxInfo {
  metadata: Record<string, string>;
  inputs: string[];
  outputs: string[];
  /** The declared shape of each input, in the order of `inputs` (sherpa-onnx passes inputs by position). */
  inputShapes: OnnxShape[];
  /** The declared shape of each output, in the order of `outputs`. */
  outputShapes: OnnxShape[];
}

const WINDOW = 1 << 16;

/** A forward reader over a file with a window of bytes, seeking by skipping. */
class FileReader {
  private buf = new Uint8Array(WINDOW);
  private bufStart = 0;
  private bufLen = 0;
  pos = 0;
  readonly size: number;

  constructor(private readonly fd: number, private readonly path: string) {
    this.size = fstatSync(fd).size;
  }

  /** Refuses the file: a field runs past its message or the file's end. */
  fail(): never {
    throw new VoicewireError('MODEL_INVALID', `${this.path} is not a complete ONNX file (truncated or corrupt at byte ${this.pos} of ${this.size})`);
  }

  private byte(): number {
    if (this.pos >= this.size) this.fail();
    if (this.pos < this.bufStart || this.pos >= this.bufStart + this.bufLen) {
      this.bufStart = this.pos;
      this.bufLen = readSync(this.fd, this.buf, 0, WINDOW, this.pos);
      if (this.bufLen <= 0) this.fail();
    }
    return this.buf[this.pos++ - this.bufStart]!;
  }

  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      const b = this.byte();
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
    return this.fail();
  }

  bytes(n: number): Uint8Array {
    if (this.pos + n > this.size) this.fail();
    const out = new Uint8Array(n);
    if (n > 0 && readSync(this.fd, out, 0, n, this.pos) !== n) this.fail();
    this.pos += n;
    return out;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.jump(8);
    else if (wire === 5) this.jump(4);
    else if (wire === 2) this.jump(this.varint());
    else this.fail(); // groups are not used by onnx.proto
  }

  jump(n: number): void {
    if (this.pos + n > this.size) this.fail();
    this.pos += n;
  }
}

const utf8 = new TextDecoder();

/** Fields of a small message (ValueInfoProto, StringStringEntryProto): field number → string, for fields 1 and 2. */
function readStrings(r: FileReader, end: number): { 1?: string; 2?: string } {
  const out: { 1?: string; 2?: string } = {};
  while (r.pos < end) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    if ((field === 1 || field === 2) && tag % 8 === 2) out[field] = utf8.decode(r.bytes(r.varint()));
    else r.skip(tag % 8);
  }
  return out;
}

/** Reads the fields of a message up to `end`, calling `on(field)` for each length-delimited one (its body next), skipping the rest. */
function eachField(r: FileReader, end: number, on: (field: number, end: number) => void): void {
  while (r.pos < end) {
    const tag = r.varint();
    if (tag % 8 === 2) {
      const e = r.varint() + r.pos;
      if (e > end) r.fail();
      on(Math.floor(tag / 8), e);
      if (r.pos < e) r.jump(e - r.pos);
    } else r.skip(tag % 8);
  }
}

/** A ValueInfoProto: its name and declared tensor shape. */
function readValueInfo(r: FileReader, end: number): { name: string; shape: OnnxShape } {
  let name = '';
  let shape: OnnxShape = null;
  eachField(r, end, (f, e) => {
    if (f === 1) name = utf8.decode(r.bytes(e - r.pos));
    else if (f === 2) {
      eachField(r, e, (tf, te) => {
        if (tf !== 1) return; // tensor_type
        eachField(r, te, (sf, se) => {
          if (sf !== 2) return; // shape
          shape = [];
          eachField(r, se, (df, de) => {
            if (df !== 1) return; // dim
            let dim: number | string = '?';
            while (r.pos < de) {
              const t = r.varint();
              if (t === 8) dim = r.varint(); // dim_value
              else if (t === 18) dim = utf8.decode(r.bytes(r.varint())) || '?'; // dim_param
              else r.skip(t % 8);
            }
            (shape as Array<number | string>).push(dim);
          });
        });
      });
    }
  });
  return { name, shape };
}

/**
 * Reads the metadata and graph input/output names of the ONNX file at `path`.
 * @throws VoicewireError `MODEL_INVALID` when the file is truncated or not protobuf.
 */
export function readOnnxInfo(path: string): OnnxInfo {
  stringArg(path, 'readOnnxInfo: path');
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new VoicewireError('MODEL_INVALID', `${path} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  try {
    const r = new FileReader(fd, path);
    const info: OnnxInfo = { metadata: {}, inputs: [], outputs: [], inputShapes: [], outputShapes: [] };
    let sawGraph = false;
    while (r.pos < r.size) {
      const tag = r.varint();
      const field = Math.floor(tag / 8);
      const wire = tag % 8;
      if (field === 0) throw new VoicewireError('MODEL_INVALID', `${path} is not an ONNX file (field 0 at byte ${r.pos})`);
      if (wire === 2 && field === 14) {
        const end = r.varint() + r.pos;
        const kv = readStrings(r, end);
        if (kv[1] !== undefined) info.metadata[kv[1]] = kv[2] ?? '';
      } else if (wire === 2 && field === 7) {
        sawGraph = true;
        const end = r.varint() + r.pos;
        if (end > r.size) r.jump(end - r.pos);
        while (r.pos < end) {
          const t = r.varint();
          const f = Math.floor(t / 8);
          if ((f === 11 || f === 12) && t % 8 === 2) {
            const e = r.varint() + r.pos;
            if (e > end) r.fail();
            const { name, shape } = readValueInfo(r, e);
            (f === 11 ? info.inputs : info.outputs).push(name);
            (f === 11 ? info.inputShapes : info.outputShapes).push(shape);
          } else r.skip(t % 8);
        }
      } else r.skip(wire);
    }
    if (!sawGraph) throw new VoicewireError('MODEL_INVALID', `${path} is not an ONNX model (it has no graph)`);
    return info;
  } finally {
    closeSync(fd);
  }
}
