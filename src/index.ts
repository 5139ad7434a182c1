/**
 * voicewire: the platform-neutral core. No `node:` imports and no `Buffer` below this entry:
 * typed arrays in, typed arrays out. Node streams live at `voicewire/node`.
 */
export { VoicewireError, ERROR_CODES, isVoicewireError, toVoicewireError } from './errors.js';
export type { ErrorCode, ErrorCodeInfo, VoicewireErrorOptions } from './errors.js';
export { ByteQueue, int16View, float32View, bytesOf, toBytes } from './bytes.js';
export type { Incremental } from './stream-core.js';
export { toWebTransformStream } from './web.js';
export type { WebTransformOptions } from './web.js';
export * from './g711.js';
export * from './format.js';
export * from './framer.js';
export * from './pcm.js';
export * from './wav.js';
export * from './tags.js';
export * from './text-chunker.js';
export * from './ndjson.js';
export * from './resampler.js';
export * from './crc32.js';
export * from './ogg.js';
export * from './opus-head.js';
export * from './opus.js';
export * from './ogg-opus.js';
export * from './protocol/index.js';
export * from './pipeline-stream.js';
export * from './audio-encoder.js';
export * from './audio-decoder.js';
export * from './tts-audio-encoder.js';
export * from './stt-audio-decoder.js';
