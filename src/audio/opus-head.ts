/**
 * The two Ogg Opus header packets (RFC 7845 §5): the identification header "OpusHead" and the
 * comment header "OpusTags". Parsers check every rule of §5 and raise `OPUS_INVALID_HEADER`
 * with the byte at fault; builders write what the parsers accept. Platform-neutral.
 */
import { describe, toBytes } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { shown } from '../util/args.js';

/** The identification header (RFC 7845 §5.1). */
export interface OpusHead {
  /** Version byte: 1 for this spec; 0–15 are compatible (major version 0). */
  readonly version: number;
  /** Output channel count C (1–255). */
  readonly channelCount: number;
  /** Samples at 48 kHz to discard from the decoder output at the start (§4.2). */
  readonly preSkip: number;
  /** Sample rate of the original input, informational only (0 = unspecified). Never the decode rate. */
  readonly inputSampleRate: number;
  /** Output gain, Q7.8 dB (signed 16-bit; 256 = +1 dB) to apply to the decoded output. */
  readonly outputGain: number;
  /** Channel mapping family: 0 (mono/stereo, one stream), 1 (Vorbis order), 255 (undefined). */
  readonly mappingFamily: number;
  /** Number of Opus streams N in each packet (1 for family 0). */
  readonly streamCount: number;
  /** Number of stereo-coupled streams M (channels − 1 for family 0). */
  readonly coupledCount: number;
  /** Output channel → decoded channel index (255 = silence). Implied `[0]` or `[0, 1]` for family 0. */
  readonly channelMapping: Uint8Array;
}

/** The comment header (RFC 7845 §5.2), Vorbis-comment style. */
export interface OpusTags {
  /** Vendor string: identifies the encoder. */
  readonly vendor: string;
  /** User comments, `"KEY=value"` (UTF-8). */
  readonly comments: readonly string[];
}

const HEAD_MAGIC = [0x4f, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64]; // "OpusHead"
const TAGS_MAGIC = [0x4f, 0x70, 0x75, 0x73, 0x54, 0x61, 0x67, 0x73]; // "OpusTags"

function hasMagic(p: Uint8Array, magic: readonly number[]): boolean {
  if (!(p instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `an Opus header check takes a Uint8Array packet, got ${describe(p)}`);
  if (p.length < 8) return false;
  for (let i = 0; i < 8; i++) if (p[i] !== magic[i]) return false;
  return true;
}

/** True when the packet starts with the "OpusHead" magic (the BOS packet of an Ogg Opus stream). */
export function isOpusHead(packet: Uint8Array): boolean {
  return hasMagic(packet, HEAD_MAGIC);
}

/** True when the packet starts with the "OpusTags" magic. */
export function isOpusTags(packet: Uint8Array): boolean {
  return hasMagic(packet, TAGS_MAGIC);
}

function invalid(message: string, at?: number): VoicewireError {
  return new VoicewireError('OPUS_INVALID_HEADER', message, at === undefined ? {} : { details: { offset: at } });
}

/**
 * Parses an OpusHead packet (RFC 7845 §5.1). Trailing bytes after the header are allowed and
 * ignored (§5.1: a later minor version may add fields).
 * @throws VoicewireError `OPUS_INVALID_HEADER` naming the rule broken.
 */
export function parseOpusHead(packet: Uint8Array): OpusHead {
  const p = toBytes(packet, 'OpusHead packet');
  if (!isOpusHead(p)) throw invalid('not an OpusHead packet (magic "OpusHead" missing)', 0);
  if (p.length < 19) throw invalid(`OpusHead is ${p.length} bytes, at least 19 are required`, p.length);
  const view = new DataView(p.buffer, p.byteOffset, p.byteLength);
  const version = p[8]!;
  // §5.1: the upper four bits are the major version; only major version 0 is decodable.
  if (version > 15) throw invalid(`OpusHead version ${version} is incompatible (major version ${version >> 4})`, 8);
  const channelCount = p[9]!;
  if (channelCount === 0) throw invalid('OpusHead channel count is 0', 9);
  const preSkip = view.getUint16(10, true);
  const inputSampleRate = view.getUint32(12, true);
  const outputGain = view.getInt16(16, true);
  const mappingFamily = p[18]!;
  if (mappingFamily === 0) {
    // §5.1.1.1: family 0 is mono or stereo in one stream, without a mapping table.
    if (channelCount > 2) throw invalid(`OpusHead channel mapping family 0 allows 1 or 2 channels, got ${channelCount}`, 9);
    return {
      version,
      channelCount,
      preSkip,
      inputSampleRate,
      outputGain,
      mappingFamily,
      streamCount: 1,
      coupledCount: channelCount - 1,
      channelMapping: channelCount === 1 ? Uint8Array.of(0) : Uint8Array.of(0, 1),
    };
  }
  if (p.length < 21 + channelCount) throw invalid(`OpusHead with mapping family ${mappingFamily} and ${channelCount} channels needs ${21 + channelCount} bytes, got ${p.length}`, p.length);
  const streamCount = p[19]!;
  const coupledCount = p[20]!;
  if (streamCount === 0) throw invalid('OpusHead stream count is 0', 19);
  if (coupledCount > streamCount) throw invalid(`OpusHead coupled stream count ${coupledCount} exceeds the stream count ${streamCount}`, 20);
  if (streamCount + coupledCount > 255) throw invalid(`OpusHead streams + coupled streams = ${streamCount + coupledCount} exceeds 255`, 20);
  if (mappingFamily === 1 && channelCount > 8) throw invalid(`OpusHead channel mapping family 1 allows 1 to 8 channels, got ${channelCount}`, 9);
  const channelMapping = p.slice(21, 21 + channelCount);
  for (let i = 0; i < channelCount; i++) {
    const m = channelMapping[i]!;
    // §5.1.1: each entry names a decoded channel (< N + M) or 255 for silence.
    if (m !== 255 && m >= streamCount + coupledCount) throw invalid(`OpusHead channel mapping entry ${i} is ${m}, beyond the ${streamCount + coupledCount} decoded channels`, 21 + i);
  }
  return { version, channelCount, preSkip, inputSampleRate, outputGain, mappingFamily, streamCount, coupledCount, channelMapping };
}

/** Fields of {@link buildOpusHead}; family 0 (mono or stereo, one stream) is what it writes. */
export interface OpusHeadFields {
  /** 1 or 2. Default 1. */
  channelCount?: 1 | 2;
  /** Pre-skip in 48 kHz samples (the encoder's look-ahead, RFC 7845 §4.2). Required. */
  preSkip: number;
  /** Informational input sample rate. Default 48000. */
  inputSampleRate?: number;
  /** Output gain, Q7.8 dB. Default 0. */
  outputGain?: number;
}

/** Builds a 19-byte OpusHead packet, version 1, channel mapping family 0 (RFC 7845 §5.1). */
export function buildOpusHead(fields: OpusHeadFields): Uint8Array {
  if (fields === null || typeof fields !== 'object') throw new VoicewireError('INVALID_ARGUMENT', `buildOpusHead takes an object, got ${describe(fields)}`);
  const channels = fields.channelCount ?? 1;
  const gain = fields.outputGain ?? 0;
  if (channels !== 1 && channels !== 2) throw new VoicewireError('INVALID_ARGUMENT', `OpusHead channelCount must be 1 or 2, got ${shown(channels)}`);
  if (!Number.isInteger(fields.preSkip) || fields.preSkip < 0 || fields.preSkip > 0xffff) throw new VoicewireError('INVALID_ARGUMENT', `OpusHead preSkip must be an integer in 0..65535, got ${shown(fields.preSkip)}`);
  if (!Number.isInteger(gain) || gain < -32768 || gain > 32767) throw new VoicewireError('INVALID_ARGUMENT', `OpusHead outputGain must be a Q7.8 integer in -32768..32767, got ${shown(gain)}`);
  const rate = fields.inputSampleRate ?? 48000;
  if (!Number.isInteger(rate) || rate < 0 || rate > 0xffffffff) throw new VoicewireError('INVALID_ARGUMENT', `OpusHead inputSampleRate must be a 32-bit unsigned integer, got ${shown(rate)}`);
  const p = new Uint8Array(19);
  p.set(HEAD_MAGIC, 0);
  const view = new DataView(p.buffer);
  p[8] = 1;
  p[9] = channels;
  view.setUint16(10, fields.preSkip, true);
  view.setUint32(12, rate, true);
  view.setInt16(16, gain, true);
  p[18] = 0;
  return p;
}

const utf8Decoder = new TextDecoder('utf-8');
const utf8Encoder = new TextEncoder();

/**
 * Parses an OpusTags packet (RFC 7845 §5.2). Every length must fit in the packet; bytes after the
 * last comment are allowed (§5.2: padding or binary data) and ignored. Strings are decoded as
 * UTF-8, invalid sequences replaced by U+FFFD.
 * @throws VoicewireError `OPUS_INVALID_HEADER`.
 */
export function parseOpusTags(packet: Uint8Array): OpusTags {
  const p = toBytes(packet, 'OpusTags packet');
  if (!isOpusTags(p)) throw invalid('not an OpusTags packet (magic "OpusTags" missing)', 0);
  const view = new DataView(p.buffer, p.byteOffset, p.byteLength);
  let at = 8;
  const need = (n: number, what: string): void => {
    if (n > p.length - at) throw invalid(`OpusTags ${what} needs ${n} bytes at byte ${at}, only ${p.length - at} remain`, at);
  };
  need(4, 'vendor string length');
  const vendorLength = view.getUint32(at, true);
  at += 4;
  need(vendorLength, 'vendor string');
  const vendor = utf8Decoder.decode(p.subarray(at, at + vendorLength));
  at += vendorLength;
  need(4, 'comment count');
  const count = view.getUint32(at, true);
  at += 4;
  // Each comment takes at least 4 bytes: reject an impossible count before allocating for it.
  if (count > (p.length - at) / 4) throw invalid(`OpusTags claims ${count} comments but only ${p.length - at} bytes remain`, at - 4);
  const comments: string[] = [];
  for (let i = 0; i < count; i++) {
    need(4, `comment ${i} length`);
    const len = view.getUint32(at, true);
    at += 4;
    need(len, `comment ${i}`);
    comments.push(utf8Decoder.decode(p.subarray(at, at + len)));
    at += len;
  }
  return { vendor, comments };
}

/** Builds an OpusTags packet (RFC 7845 §5.2) from a vendor string and `"KEY=value"` comments. */
export function buildOpusTags(tags: { vendor: string; comments?: readonly string[] }): Uint8Array {
  if (tags === null || typeof tags !== 'object') throw new VoicewireError('INVALID_ARGUMENT', `buildOpusTags takes an object, got ${describe(tags)}`);
  if (typeof tags.vendor !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `buildOpusTags vendor must be a string, got ${describe(tags.vendor)}`);
  if (tags.comments !== undefined && !(Array.isArray(tags.comments) && tags.comments.every((c) => typeof c === 'string'))) {
    throw new VoicewireError('INVALID_ARGUMENT', `buildOpusTags comments must be an array of strings, got ${describe(tags.comments)}`);
  }
  const vendor = utf8Encoder.encode(tags.vendor);
  const comments = (tags.comments ?? []).map((c) => {
    // §5.2: a comment is "NAME=value" with a name of printable ASCII other than '='.
    if (!/^[\x20-\x3C\x3E-\x7D]+=/.test(c)) throw new VoicewireError('INVALID_ARGUMENT', `an OpusTags comment must be "NAME=value" with an ASCII name, got ${JSON.stringify(c.slice(0, 40))}`);
    return utf8Encoder.encode(c);
  });
  let size = 8 + 4 + vendor.length + 4;
  for (const c of comments) size += 4 + c.length;
  const p = new Uint8Array(size);
  const view = new DataView(p.buffer);
  p.set(TAGS_MAGIC, 0);
  let at = 8;
  view.setUint32(at, vendor.length, true);
  p.set(vendor, at + 4);
  at += 4 + vendor.length;
  view.setUint32(at, comments.length, true);
  at += 4;
  for (const c of comments) {
    view.setUint32(at, c.length, true);
    p.set(c, at + 4);
    at += 4 + c.length;
  }
  return p;
}
