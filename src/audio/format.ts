/**
 * The audio format names of the service API and what each one means on the wire.
 *
 * Names (docs/api.md §4.2 `output_format`, §4.4 `input_format`): `wav`, `pcm`, `opus`,
 * `ulaw_8000`, `mulaw_8000` (alias of `ulaw_8000`, protocol-notes.md), `alaw_8000`, `pcm_8000`,
 * `pcm_16000`, `pcm_22050`, `pcm_24000`, `pcm_44100`, `pcm_48000`. Every format is mono.
 *
 * Two names depend on the direction of the audio:
 * - `pcm` is 48 kHz s16le for TTS output (§4.2 "pcm: 48000 Hz") but 24 kHz s16le for STT input
 *   (§4.4 "PCM input: 24000 Hz").
 * - `wav` is 48 kHz s16le for TTS output (§4.2); on STT input the rate and bit depth (16, 24 or
 *   32, §4.4) come from the file's header, so they are `null` here.
 */
import { VoicewireError } from '../util/errors.js';
import { describe } from '../util/bytes.js';
import { optionsArg } from '../util/args.js';

/** Every format name the API accepts, in the order of docs/api.md §4.2. */
export const AUDIO_FORMAT_NAMES = [
  'wav',
  'pcm',
  'opus',
  'ulaw_8000',
  'mulaw_8000',
  'alaw_8000',
  'pcm_8000',
  'pcm_16000',
  'pcm_22050',
  'pcm_24000',
  'pcm_44100',
  'pcm_48000',
] as const;

/** One of {@link AUDIO_FORMAT_NAMES}. */
export type AudioFormatName = (typeof AUDIO_FORMAT_NAMES)[number];

/** Output formats of POST /post/speech/tts (docs/api.md §4.2): every name. */
export const TTS_OUTPUT_FORMATS: readonly AudioFormatName[] = AUDIO_FORMAT_NAMES;

/** The shorter list the streaming TTS WebSocket names (docs/api.md §4.5 `output_format`). */
export const TTS_STREAMING_OUTPUT_FORMATS = [
  'pcm',
  'wav',
  'opus',
  'ulaw_8000',
  'alaw_8000',
  'pcm_8000',
  'pcm_16000',
  'pcm_24000',
] as const satisfies readonly AudioFormatName[];

/** Input formats of the streaming STT WebSocket (docs/api.md §4.4 `input_format`, default `wav`). */
export const STT_INPUT_FORMATS = [
  'pcm',
  'pcm_8000',
  'pcm_16000',
  'pcm_22050',
  'pcm_24000',
  'pcm_44100',
  'pcm_48000',
  'wav',
  'opus',
  'ulaw_8000',
  'mulaw_8000',
  'alaw_8000',
] as const satisfies readonly AudioFormatName[];

/** Sample coding of a format: little-endian 16-bit PCM, G.711 μ-law or A-law, or Opus. */
export type AudioCodec = 'pcm_s16le' | 'mulaw' | 'alaw' | 'opus';

/** How samples are wrapped: headerless bytes, a RIFF/WAVE file, or Ogg pages (RFC 7845). */
export type AudioContainer = 'raw' | 'wav' | 'ogg';

/**
 * Which side of the service the audio is on; it decides what `pcm` and `wav` mean.
 * `'tts-output'`: audio the TTS routes produce (§4.2, §4.5). `'stt-input'`: audio the STT routes
 * accept (§4.3, §4.4).
 */
export type AudioFormatDirection = 'tts-output' | 'stt-input';

/** Options of {@link parseAudioFormat}. */
export interface ParseAudioFormatOptions {
  /** Direction of the audio. Default `'tts-output'` (the API's `output_format`). */
  direction?: AudioFormatDirection;
}

/** What a format name means. Objects are frozen and shared: do not mutate. */
export interface AudioFormat {
  /** The name as given (`mulaw_8000` stays `mulaw_8000`). */
  readonly name: AudioFormatName;
  /** The canonical name: `mulaw_8000` becomes `ulaw_8000`; every other name is itself. */
  readonly canonical: AudioFormatName;
  /** Sample coding. For `wav` it is `pcm_s16le` on TTS output; on STT input it names the family
   *  (integer PCM, WAVE format 1) and the bit depth comes from the header. */
  readonly codec: AudioCodec;
  /** Container. */
  readonly container: AudioContainer;
  /** Sample rate in Hz, or `null` when it comes from the header (`wav` on STT input). Opus is
   *  always decoded at 48000 Hz (RFC 7845 §5.1). */
  readonly sampleRate: number | null;
  /** Always 1: the service's audio is mono. */
  readonly channels: 1;
  /** Bytes per sample of the raw stream: 2 for s16le (and TTS `wav` data), 1 for G.711, `null`
   *  for Opus and for `wav` on STT input (16, 24 or 32 bits, from the header). */
  readonly bytesPerSample: number | null;
  /** The direction this description applies to. */
  readonly direction: AudioFormatDirection;
}

type Spec = Omit<AudioFormat, 'name' | 'canonical' | 'direction'>;

function pcm(rate: number): Spec {
  return { codec: 'pcm_s16le', container: 'raw', sampleRate: rate, channels: 1, bytesPerSample: 2 };
}

function specOf(name: AudioFormatName, direction: AudioFormatDirection): Spec {
  switch (name) {
    case 'wav':
      return direction === 'tts-output'
        ? { codec: 'pcm_s16le', container: 'wav', sampleRate: 48000, channels: 1, bytesPerSample: 2 } // §4.2
        : { codec: 'pcm_s16le', container: 'wav', sampleRate: null, channels: 1, bytesPerSample: null }; // §4.4
    case 'pcm':
      return pcm(direction === 'tts-output' ? 48000 : 24000); // §4.2 vs §4.4
    case 'opus':
      return { codec: 'opus', container: 'ogg', sampleRate: 48000, channels: 1, bytesPerSample: null };
    case 'ulaw_8000':
    case 'mulaw_8000':
      return { codec: 'mulaw', container: 'raw', sampleRate: 8000, channels: 1, bytesPerSample: 1 };
    case 'alaw_8000':
      return { codec: 'alaw', container: 'raw', sampleRate: 8000, channels: 1, bytesPerSample: 1 };
    case 'pcm_8000':
      return pcm(8000);
    case 'pcm_16000':
      return pcm(16000);
    case 'pcm_22050':
      return pcm(22050);
    case 'pcm_24000':
      return pcm(24000);
    case 'pcm_44100':
      return pcm(44100);
    case 'pcm_48000':
      return pcm(48000);
  }
}

// Built once: a Map (not an object) so that `__proto__`, `constructor` etc. are never names.
const TABLES = new Map<AudioFormatDirection, Map<string, AudioFormat>>();
for (const direction of ['tts-output', 'stt-input'] as const) {
  const table = new Map<string, AudioFormat>();
  for (const name of AUDIO_FORMAT_NAMES) {
    const canonical: AudioFormatName = name === 'mulaw_8000' ? 'ulaw_8000' : name;
    table.set(name, Object.freeze({ name, canonical, ...specOf(name, direction), direction }));
  }
  TABLES.set(direction, table);
}

const NAME_SET: ReadonlySet<string> = new Set(AUDIO_FORMAT_NAMES);

/** True when `value` is one of {@link AUDIO_FORMAT_NAMES} (exact, case-sensitive). */
export function isAudioFormatName(value: unknown): value is AudioFormatName {
  return typeof value === 'string' && NAME_SET.has(value);
}

function shown(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

/**
 * Describes an API audio format name: codec, container, sample rate, channels, bytes per sample.
 *
 * @param name - one of {@link AUDIO_FORMAT_NAMES}; exact and case-sensitive, as the API.
 * @param options - `direction` (default `'tts-output'`) decides `pcm` (48 kHz out, 24 kHz in) and
 *   `wav` (48 kHz s16le out; rate and depth from the header in).
 * @returns a frozen, shared {@link AudioFormat}.
 * @throws VoicewireError `FORMAT_UNKNOWN` (close code 1008) for a string that is not a format
 *   name; the message lists the valid names. `INVALID_ARGUMENT` when `name` is not a string or
 *   `direction` is not one of the two directions.
 */
export function parseAudioFormat(name: string, options?: ParseAudioFormatOptions): AudioFormat {
  const direction = optionsArg(options, 'parseAudioFormat options').direction ?? 'tts-output';
  const table = TABLES.get(direction);
  if (table === undefined) {
    throw new VoicewireError('INVALID_ARGUMENT', `parseAudioFormat: direction must be 'tts-output' or 'stt-input', got ${typeof direction === 'string' ? shown(direction) : describe(direction)}`);
  }
  if (typeof name !== 'string') {
    throw new VoicewireError('INVALID_ARGUMENT', `parseAudioFormat: the format name must be a string, got ${describe(name)}; valid names: ${AUDIO_FORMAT_NAMES.join(', ')}`);
  }
  const format = table.get(name);
  if (format === undefined) {
    throw new VoicewireError('FORMAT_UNKNOWN', `Unknown audio format ${shown(name)}; valid names: ${AUDIO_FORMAT_NAMES.join(', ')}`, {
      details: { name, valid: AUDIO_FORMAT_NAMES },
    });
  }
  return format;
}
