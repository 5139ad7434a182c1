/**
 * voicewire: the platform-neutral core. No `node:` imports and no `Buffer` below this entry:
 * typed arrays in, typed arrays out. Node streams live at `voicewire/node`.
 */
export { VoicewireError, ERROR_CODES, isVoicewireError, toVoicewireError } from './util/errors.js';
export type { ErrorCode, ErrorCodeInfo, VoicewireErrorOptions } from './util/errors.js';
export { ByteQueue, int16View, float32View, bytesOf, toBytes } from './util/bytes.js';
export type { Incremental } from './util/stream-core.js';
export { toWebTransformStream } from './util/web.js';
export type { WebTransformOptions } from './util/web.js';
export * from './audio/g711.js';
export * from './audio/format.js';
export * from './audio/framer.js';
export * from './audio/pcm.js';
export * from './audio/wav.js';
export * from './text/tags.js';
export * from './text/text-chunker.js';
export * from './text/ndjson.js';
export * from './audio/resampler.js';
export * from './audio/crc32.js';
export * from './audio/ogg.js';
export * from './audio/opus-head.js';
export * from './audio/opus.js';
export * from './audio/ogg-opus.js';
export * from './util/base64.js';
export * from './protocol/index.js';
export * from './sessions/index.js';
export * from './pipelines/pipeline-stream.js';
export * from './pipelines/audio-encoder.js';
export * from './pipelines/audio-decoder.js';
export * from './pipelines/tts-audio-encoder.js';
export * from './pipelines/stt-audio-decoder.js';
