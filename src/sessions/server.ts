/**
 * Server session runners: the imperative shell around the pure server machines. A runner holds
 * the machine state, feeds it events (received frames, engine events, barriers), and executes the
 * effects: it sends frames, closes the socket, and drives the engine streams.
 *
 * A WebSocket server is then a few lines of glue (see the README's protocol section):
 *
 * ```ts
 * wss.on('connection', (ws, req) => {
 *   const session = createTtsServerSession({
 *     engine,
 *     transport: {
 *       // A promise per frame: the runner asks the engine for more once the socket took it (backpressure).
 *       send: (text) => new Promise<void>((resolve, reject) => ws.send(text, (err) => (err ? reject(err) : resolve()))),
 *       close: (code, reason) => ws.close(code, reason),
 *     },
 *   });
 *   try {
 *     readCredentials({ headers: req.headers, url: req.url, route: 'tts' }); // §5; check the key/token here
 *   } catch (err) {
 *     return session.fail(err as VoicewireError); // error 1008, close 1008
 *   }
 *   ws.on('message', (data, isBinary) => session.receive(isBinary ? data : data.toString()));
 *   ws.on('close', () => session.transportClosed());
 * });
 * ```
 *
 * Backpressure: `send` may return a promise (or `false` plus `drained()`); while sends are pending,
 * engine calls wait (see {@link ServerTransport}). TTS timing: each `audio` message carries the
 * encoded chunk's own `start_s`/`stop_s` ({@link TtsOutputEncoder}), and each word timestamp is held
 * until the audio reaching its `stop_s` was sent.
 *
 * The runners: stt-server-session.ts and tts-server-session.ts, over server-runner.ts (the
 * generic part) and server-session.ts (the transport and options); this module gathers them.
 *
 * Ordering: events are processed one at a time, run to completion (an engine that emits events
 * synchronously inside a call has them queued behind the current step). Engine calls of one
 * request stream never overlap: each waits for the previous one to settle. Flush and end are
 * barriers in that queue, so `flushed` and `end_of_stream` follow every event the frames before
 * them produced.
 */
export { DEFAULT_MAX_QUEUED_BYTES, DEFAULT_MAX_QUEUED_MESSAGES, type ServerSession, type ServerSessionOptions, type ServerTransport } from './server-session.js';
export { createSttServerSession, defaultSttInputDecoder, type SttInputDecoder, type SttServerSessionOptions } from './stt-server-session.js';
export { createTtsServerSession, defaultTtsOutputEncoder, type TtsOutputChunk, type TtsOutputEncoder, type TtsServerSessionOptions } from './tts-server-session.js';
