/**
 * voicewire/engines: real speech engines for servers built on voicewire (Node only). espeak-ng
 * TTS (GPL-3.0, an optional peer dependency loaded at run time), pocketsphinx STT (Debian, through
 * koffi), the WebRTC VAD behind `step` predictions, and sherpa-onnx models (Piper, Kokoro, Whisper,
 * NeMo…; optional dependencies) on worker threads. Each implements the library's
 * `TtsEngine` / `SttEngine` (src/sessions/engine.ts).
 */
export { createEspeakTtsEngine, effectiveVoiceParams } from './espeak-tts.js';
export type { EspeakTtsContext, EspeakTtsOptions, EspeakVoice } from './espeak-tts.js';
export type { EngineContext, EngineDictionary, EngineVoice } from './context.js';
export { closeEspeakThread, espeakAvailable, ESPEAK_PACKAGE, ESPEAK_WASM_QUEUE, ESPEAK_QUANTUM, ESPEAK_RESTART } from './espeak-module.js';
export type { EspeakAsyncWorker } from './espeak-module.js';
export { loadSystemEspeak, systemEspeakAvailable, ESPEAK_SYSTEM_LIBRARY, ESPEAK_SYSTEM_PACKAGE, ESPEAK_SYSTEM_QUEUE } from './espeak-system.js';
export { catalogVoices, designVoices, voiceParamsFromSample, estimateVoiceFromSample, defaultVoiceParams } from './espeak-voices.js';
export type { CatalogVoice, DesignVoicesInput, EspeakVoiceParams, SampleVoiceEstimate } from './espeak-voices.js';
export { applyRewriteRules, rewriteText, rewriteWordWithRules } from './rewrite-rules.js';
export { createPocketsphinxSttEngine } from './pocketsphinx-stt.js';
export type { PocketsphinxSttEngine, PocketsphinxSttOptions } from './pocketsphinx-stt.js';
export { EngineBudget, KeyedBudget, ReservedShares, STT_DECODER_BUDGET, STT_DECODER_BYTES, defaultSttDecoders, limitSttStreams } from './budget.js';
export type { EngineBudgetOptions } from './budget.js';
export { pocketsphinxAvailable, pocketsphinxModelFromDir, POCKETSPHINX_PACKAGES, DEBIAN_EN_US_MODEL, POCKETSPHINX_CALLS } from './pocketsphinx-ffi.js';
export { FairQueue, tenantPath } from './fair-queue.js';
export type { FairQueueOptions, TenantPath, Displaced } from './fair-queue.js';
export { FairLimiter, defaultNativeCalls } from './fair-limiter.js';
export type { PocketsphinxModel } from './pocketsphinx-ffi.js';
export { VoiceActivity, loadVad, inactivityFromPause, VAD_HORIZONS, PAUSE_MODEL } from './vad.js';
export type { FvadModule } from './vad.js';
export { createSherpaTtsEngine, sherpaCatalogVoices, speedFromPaddingBonus, SHERPA_LAG_WORDS } from './sherpa-tts.js';
export type { SherpaTtsOptions } from './sherpa-tts.js';
export { createSherpaSttEngine } from './sherpa-stt.js';
export type { SherpaSttOptions } from './sherpa-stt.js';
export { SherpaPool, defaultSherpaWorkers, DEFAULT_SHERPA_QUEUE } from './sherpa-pool.js';
export type { SherpaPoolOptions, TtsJob, TtsJobResult, SttJob, SttJobResult } from './sherpa-pool.js';
export { createSherpaOnlineSttEngine } from './sherpa-stt-online.js';
export { SherpaOnlinePool, DEFAULT_SHERPA_STREAMS } from './sherpa-online.js';
export type { SherpaOnlinePoolOptions, SherpaOnlineStream, OnlineResult } from './sherpa-online.js';
export { resolveSherpaTtsModel, resolveSherpaSttModel, validateSherpaModel, SHERPA_TTS_TYPES, SHERPA_STT_TYPES, SHERPA_PACKAGE, MODEL_CHECK_TIMEOUT_MS } from './sherpa-model.js';
export type { SherpaModel, SherpaModelFacts, SherpaTtsType, SherpaSttType } from './sherpa-model.js';
export { resolveSherpaVad, validateSherpaVad, SherpaVadWorker } from './sherpa-vad.js';
export type { SherpaVadModel, SherpaVadOptions, SherpaVadStream } from './sherpa-vad.js';
export { SileroStepsWorker, startSileroSteps, withSileroSteps } from './silero-steps.js';
export type { SileroFrame, SileroStepsStream } from './silero-steps.js';
export { readOnnxInfo } from './onnx-info.js';
export type { OnnxInfo } from './onnx-info.js';
