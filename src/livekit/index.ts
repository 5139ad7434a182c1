/**
 * voicewire/livekit: a LiveKit Agents (Node) plugin for the voice service's own protocol — `TTS`
 * (LLM text in as it comes, audio frames and word timestamps out) and `STT` (frames at any rate
 * in, interim and final transcripts and start/end of speech from the service's VAD steps and
 * turn-taking out), each with one multiplexed WebSocket per instance. See docs/livekit.md.
 *
 * `@livekit/agents` and `@livekit/rtc-node` are optional peer dependencies: without them, importing
 * this entry throws `CLIENT_DEPENDENCY_MISSING` naming them.
 */
export { TTS, SynthesizeStream, ChunkedStream, TTS_SAMPLE_RATES } from './tts.js';
export type { TTSOptions, TtsSampleRate } from './tts.js';
export { STT, SpeechStream } from './stt.js';
export type { STTOptions } from './stt.js';
export type { ConnectionOptions } from './connection.js';
export { VoicewireError, isVoicewireError } from '../util/errors.js';
