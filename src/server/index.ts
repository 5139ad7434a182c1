/**
 * voicewire/server: the reference service (Node only) — `createVoiceServer`, its config, store
 * interface, the memory store for tests, and the key helpers.
 */
export { createVoiceServer, type VoiceServer, type VoiceServerOptions } from './server.js';
export { resolveServerConfig, DEFAULT_LIMITS, DEFAULT_RATES, type ServerConfig, type ServerConfigInput, type ServerLimits, type CreditRates } from './config.js';
export { bootstrap, type BootstrapResult } from './bootstrap.js';
export { createKey, generateApiKey, hashSecret } from './keys.js';
export { MemoryStore } from './store/memory-store.js';
export { openStore, type OpenStoreOptions } from './store/open.js';
export type * from './store/store.js';
export { TTS_ENGINES, STT_ENGINES, catalogVoices, chooseTtsEngine, type EngineContext, type CatalogVoice } from '../engines/registry.js';
