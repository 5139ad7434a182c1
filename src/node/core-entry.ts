/**
 * `import … from 'voicewire'` on Node (the package's `node` export condition): the platform-neutral
 * core, with Node's native paths registered on import — Buffer's base64 for audio lines (8–14× the
 * JS codec) and libopus through `@evan/opus` when it is installed — so no Node user of the
 * documented entry gets the slow path (issue 22). Browsers and other runtimes get `src/index.ts` as is.
 */
export * from '../index.js';
import { registerNativeOpus } from './opus-native.js';
import { registerNativeBase64 } from './base64.js';

registerNativeOpus();
registerNativeBase64();
