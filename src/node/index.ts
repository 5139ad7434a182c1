/**
 * voicewire/node: Node Transform streams over the platform-neutral cores, and Node-only helpers
 * (the ffmpeg bridge). Everything from the core entry is re-exported for convenience.
 */
export * from '../index.js';
import { registerNativeOpus } from './opus-native.js';
import { registerNativeBase64 } from './base64.js';
registerNativeOpus(); // Opus on the native libopus when @evan/opus is installed (optional dependency), else wasm
registerNativeBase64(); // Buffer's base64 for the core's audio lines
export { bufferBase64 } from './base64.js';
export { CoreTransform, toNodeTransform } from './transform.js';
export type { NodeTransformOptions } from './transform.js';
export { createFfmpegDecoderStream, decodeWithFfmpeg, isFfmpegAvailable } from './ffmpeg.js';
export type { FfmpegDecodeOptions } from './ffmpeg.js';
export * from './framer.js';
export * from './wav.js';
export * from './ndjson.js';
export * from './tags.js';
export * from './resampler.js';
export * from './ogg-opus.js';
export * from './protocol.js';
export * from './pipelines.js';
export * from './ws-session.js';
export { nativeOpusBackend, registerNativeOpus } from './opus-native.js';
export { createClient } from './client.js';
