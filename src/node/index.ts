/**
 * voicewire/node: Node Transform streams over the platform-neutral cores, and Node-only helpers
 * (the ffmpeg bridge). Everything from the core entry is re-exported for convenience.
 */
export * from '../index.js';
export { CoreTransform, toNodeTransform } from './transform.js';
export type { NodeTransformOptions } from './transform.js';
export * from './framer.js';
export * from './wav.js';
export * from './ndjson.js';
export * from './tags.js';
export * from './resampler.js';
export * from './ogg-opus.js';
export * from './protocol.js';
export * from './pipelines.js';
export { createClient } from './client.js';
