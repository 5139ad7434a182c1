/**
 * The speech-to-speech session of `/speech/s2s` (protocol-notes.md, last section): an STT server
 * session and a TTS server session composed over one socket. The client's `audio` and
 * `end_of_stream` go to the STT runner; each word it hears goes back to the client as `text`
 * (`text`, `start_s`, `stop_s`, `stream_id`) and to the TTS runner as text, whose `audio` messages
 * (in the setup's `output_format`, at its rate) go to the client; a pause the STT's voice activity
 * sees (`inactivity_prob` ≥ 0.5 over the shortest horizon) flushes the TTS, so speech comes back
 * phrase by phrase. The runners validate their halves of the setup (formats, `json_config`,
 * `voice_id`) and their errors reach the client as they are (`error`, then close).
 *
 * Setup: `model_name`, `stt_model_name`/`tts_model_name` (default `model_name`), `input_format`
 * (default `pcm`, 24 kHz), `output_format` (default `pcm`, 48 kHz), `voice_id`, `json_config`
 * (object or JSON string, depth-limited; STT keys `language`, `delay_in_frames`; TTS keys
 * `padding_bonus`, `temp`, `cfg_coef`, `rewrite_rules` — the two keys both halves know,
 * `temp` and `padding_bonus`, are the TTS half's: they shape the speech given back, and the STT
 * engines take only 0 for them anyway; `target_language` must be the source language, `en`
 * unless `language` says otherwise: there is no translation engine; any other key is refused,
 * never dropped: every refusal is `error` 1008), `client_req_id` (echoed), `close_ws_on_eos`
 * (default true). One request per socket.
 *
 * Messages to the client: `ready` (`request_id`, `model_name`, `sample_rate` and `frame_size` of
 * the output, `delay_in_frames` of the STT) first, then `text` and `audio`, `end_of_stream` last.
 */
import { VoicewireError, toVoicewireError } from '../../util/errors.js';
import { FieldReader, PROTOCOL_LANGUAGES, describeIssue, isRecord, objectValue, type ProtocolLanguage, type ValidationIssue } from '../../protocol/validate.js';
import { readSttDelayInFrames, readTtsJsonConfig, type TtsJsonConfig } from '../../protocol/config.js';
import { errorMessageOf, serializeSttServerMessage, type RawMessage } from '../../protocol/parse.js';
import {
  createSttServerSession,
  createTtsServerSession,
  type ServerSession,
  type ServerSessionOptions,
  type ServerTransport,
  type SttServerSessionOptions,
} from '../../sessions/server.js';
import type { SttEngine, TtsEngine } from '../../sessions/engine.js';
import { isAudioFormatName, parseAudioFormat } from '../../audio/format.js';

/** The phase of an s2s session. */
export interface S2sState {
  phase: 'awaiting_setup' | 'running' | 'closed';
}

/** Options of {@link createS2sServerSession}. */
export interface S2sServerSessionOptions extends ServerSessionOptions {
  stt: SttEngine;
  tts: TtsEngine;
  /** STT input decoder factory, as {@link SttServerSessionOptions.createInputDecoder}. */
  createInputDecoder?: SttServerSessionOptions['createInputDecoder'];
}

/** The STT's shortest-horizon inactivity at which the words so far are spoken (a pause). */
const PAUSE_PROBABILITY = 0.5;

const invalid = (message: string): VoicewireError => new VoicewireError('PROTOCOL_INVALID_MESSAGE', message, { closeCode: 1008 });

/** A client frame as a JSON object. */
function toObject(raw: RawMessage): Record<string, unknown> {
  let value: unknown = raw;
  if (typeof raw === 'string' || raw instanceof Uint8Array || raw instanceof ArrayBuffer) {
    let text: string;
    try {
      text = typeof raw === 'string' ? raw : new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      throw invalid('s2s: a message is not valid UTF-8');
    }
    try {
      value = JSON.parse(text);
    } catch {
      throw invalid('s2s: a message is not valid JSON');
    }
  }
  if (!isRecord(value) || typeof value['type'] !== 'string') throw invalid('s2s: a message must be a JSON object with a string type');
  return value;
}

/** s2s's `json_config`, split into its halves. */
interface S2sJsonConfig {
  stt: Record<string, unknown>;
  tts: TtsJsonConfig;
  target?: ProtocolLanguage;
}

/** Reads s2s's `json_config` (see the module comment): each key honoured by a half, or refused. */
export function readS2sJsonConfig(r: FieldReader): S2sJsonConfig {
  const stt: Record<string, unknown> = {};
  const language = r.literal('language', PROTOCOL_LANGUAGES);
  if (language !== undefined) stt['language'] = language;
  // The delay of the STT half (the runner keeps it), one of the values the service's client lists.
  const delay = readSttDelayInFrames(r);
  if (delay !== undefined) stt['delay_in_frames'] = delay;
  const target = r.literal('target_language', PROTOCOL_LANGUAGES);
  // The §2.8 keys, and the refusal of every key not read by now.
  const tts = readTtsJsonConfig(r);
  const out: S2sJsonConfig = { stt, tts };
  if (target !== undefined) out.target = target;
  return out;
}

/** `json_config` (object or JSON string, protocol-notes.md) validated; 1008 in s2s's form when it is not good. */
function s2sConfig(raw: unknown): S2sJsonConfig {
  if (raw === undefined || raw === null) return { stt: {}, tts: {} };
  const issues: ValidationIssue[] = [];
  // A string is parsed with the depth limit of every JSON body (issue 20).
  const obj = objectValue(raw, ['json_config'], issues, true);
  const config = obj === undefined ? undefined : readS2sJsonConfig(new FieldReader(obj, ['json_config'], 'strict', issues));
  if (config === undefined || issues.length > 0) {
    // A JSON error says why (`JSON nested deeper than 64 levels`): the socket has no 422 body to carry ctx.
    const said = issues.map((i) => (typeof i.ctx?.['error'] === 'string' && i.type === 'json_invalid' ? `${describeIssue(i)}: ${i.ctx['error']}` : describeIssue(i)));
    throw new VoicewireError('PROTOCOL_INVALID_CONFIG', `s2s: invalid json_config: ${said.join('; ')}`, { closeCode: 1008, details: { issues } });
  }
  return config;
}

interface HeardWord {
  text: string;
  start_s: number;
  stream_id: number;
}

class S2sRunner implements ServerSession<S2sState> {
  state: S2sState = { phase: 'awaiting_setup' };
  private stt: ServerSession<unknown> | undefined;
  private tts: ServerSession<unknown> | undefined;
  private sttReady: Record<string, unknown> | undefined;
  private ttsReady: Record<string, unknown> | undefined;
  /** Messages made before `ready` went out (the STT may hear words before the TTS is open). */
  private readonly early: Record<string, unknown>[] = [];
  private readySent = false;
  private heard: HeardWord | undefined;
  private unspoken = false;
  private clientReqId: string | undefined;
  private closeOnEos = true;
  private outputFormat: unknown = 'pcm';

  constructor(private readonly options: S2sServerSessionOptions) {}

  get closed(): boolean {
    return this.state.phase === 'closed';
  }

  receive(data: RawMessage): void {
    if (this.closed) return;
    let msg: Record<string, unknown>;
    try {
      msg = toObject(data);
      if (this.state.phase === 'awaiting_setup') {
        if (msg['type'] !== 'setup') throw new VoicewireError('PROTOCOL_SETUP_REQUIRED', `s2s: the first message must be setup, got ${JSON.stringify(msg['type'])}`, { closeCode: 1008 });
        this.setup(msg);
        return;
      }
      if (msg['type'] === 'setup') throw new VoicewireError('PROTOCOL_UNEXPECTED_MESSAGE', 's2s: one request per socket: a second setup is not allowed', { closeCode: 1008 });
      if (msg['type'] !== 'audio' && msg['type'] !== 'end_of_stream') {
        throw new VoicewireError('PROTOCOL_UNEXPECTED_MESSAGE', `s2s: the client sends audio and end_of_stream after setup, got ${JSON.stringify(msg['type'])}`, { closeCode: 1008 });
      }
    } catch (err) {
      this.fail(toVoicewireError(err));
      return;
    }
    // The STT runner checks and queues the audio (and holds it until its engine is open).
    const { client_req_id: _id, ...forward } = msg;
    this.stt!.receive(forward);
  }

  private setup(msg: Record<string, unknown>): void {
    const str = (k: string): string | undefined => {
      const v = msg[k];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'string') throw new VoicewireError('PROTOCOL_INVALID_SETUP', `s2s: ${k} must be a string`, { closeCode: 1008 });
      return v;
    };
    const config = s2sConfig(msg['json_config']);
    const source = config.stt['language'] ?? 'en';
    const target = config.target;
    if (target !== undefined && target !== source) {
      throw new VoicewireError('PROTOCOL_INVALID_CONFIG', `s2s: translation is not offered (no translation engine): target_language ${JSON.stringify(target)} must be omitted or equal the source language ${JSON.stringify(source)}`, { closeCode: 1008 });
    }
    this.clientReqId = str('client_req_id');
    const eos = msg['close_ws_on_eos'];
    if (eos !== undefined && typeof eos !== 'boolean') throw new VoicewireError('PROTOCOL_INVALID_SETUP', 's2s: close_ws_on_eos must be a boolean', { closeCode: 1008 });
    this.closeOnEos = eos ?? true;
    const model = str('model_name') ?? 'default';
    const voice = str('voice_id');
    this.state = { phase: 'running' };
    // One request: both runners report the same id (the connection's, as on the other routes).
    const id = this.options.requestId?.() ?? 's2s';
    const common = { requestId: () => id };
    const sttOptions: SttServerSessionOptions = { ...common, engine: this.options.stt, transport: this.half('stt') };
    if (this.options.createInputDecoder) sttOptions.createInputDecoder = this.options.createInputDecoder;
    if (this.options.onEvent) sttOptions.onEvent = this.options.onEvent;
    this.stt = createSttServerSession(sttOptions);
    this.tts = createTtsServerSession({ ...common, engine: this.options.tts, transport: this.half('tts') });
    this.stt.receive({
      type: 'setup',
      model_name: str('stt_model_name') ?? model,
      input_format: msg['input_format'] ?? 'pcm',
      json_config: config.stt,
      close_ws_on_eos: false,
    });
    this.outputFormat = msg['output_format'] ?? 'pcm';
    const ttsSetup: Record<string, unknown> = {
      type: 'setup',
      model_name: str('tts_model_name') ?? model,
      output_format: this.outputFormat,
      json_config: config.tts,
      close_ws_on_eos: false,
    };
    if (voice !== undefined) ttsSetup['voice_id'] = voice;
    this.tts?.receive(ttsSetup);
  }

  /** The transport one runner writes to: its messages are read here, never sent as they are. */
  private half(which: 'stt' | 'tts'): ServerTransport {
    const outer = this.options.transport;
    const t: ServerTransport = {
      send: (text) => (this.closed ? undefined : which === 'stt' ? this.fromStt(JSON.parse(text) as Record<string, unknown>) : this.fromTts(text)),
      // A runner closes only after an error it already sent (close_ws_on_eos is off for both).
      close: () => {},
    };
    if (outer.pauseReading) t.pauseReading = () => outer.pauseReading!();
    if (outer.resumeReading) t.resumeReading = () => outer.resumeReading!();
    return t;
  }

  private fromStt(m: Record<string, unknown>): unknown {
    switch (m['type']) {
      case 'ready':
        this.sttReady = m;
        return this.maybeReady();
      case 'text': {
        const said = this.sayHeard(typeof m['start_s'] === 'number' ? m['start_s'] : 0);
        this.heard = { text: String(m['text']), start_s: Number(m['start_s'] ?? 0), stream_id: typeof m['stream_id'] === 'number' ? m['stream_id'] : 0 };
        return said;
      }
      case 'end_text':
        return this.sayHeard(typeof m['stop_s'] === 'number' ? m['stop_s'] : undefined);
      case 'step': {
        const vad = Array.isArray(m['vad']) ? (m['vad'] as Array<{ inactivity_prob?: number }>) : [];
        if (this.unspoken && this.heard === undefined && (vad[0]?.inactivity_prob ?? 0) >= PAUSE_PROBABILITY) {
          this.unspoken = false;
          this.tts!.receive({ type: 'text', text: '<flush>' });
        }
        return undefined;
      }
      case 'end_of_stream':
        this.sayHeard(undefined);
        this.tts!.receive({ type: 'end_of_stream' });
        return undefined;
      case 'error':
        return this.failWith(m);
      default:
        return undefined;
    }
  }

  private fromTts(text: string): unknown {
    const m = JSON.parse(text) as Record<string, unknown>;
    switch (m['type']) {
      case 'ready':
        this.ttsReady = m;
        return this.maybeReady();
      case 'audio':
        if (this.clientReqId === undefined && this.readySent) return this.options.transport.send(text);
        return this.send(m);
      case 'end_of_stream': {
        const r = this.send({ type: 'end_of_stream' });
        if (this.closeOnEos) this.close(1000, 'end of stream');
        return r;
      }
      case 'error':
        return this.failWith(m);
      default:
        // The TTS's own word timestamps and need_more_text are not the client's business here.
        return undefined;
    }
  }

  /** Sends the word heard last (ending at `stop_s`, or at its start) as `text`, and gives it to the TTS. */
  private sayHeard(stop: number | undefined): unknown {
    const w = this.heard;
    if (w === undefined) return undefined;
    this.heard = undefined;
    this.unspoken = true;
    this.tts!.receive({ type: 'text', text: w.text });
    return this.send({ type: 'text', text: w.text, start_s: w.start_s, stop_s: Math.max(w.start_s, stop ?? w.start_s), stream_id: w.stream_id });
  }

  private maybeReady(): unknown {
    if (this.readySent || this.sttReady === undefined || this.ttsReady === undefined) return undefined;
    this.readySent = true;
    // protocol-notes.md: `sample_rate` is the rate of the output format (8000 for ulaw_8000), frames 80 ms of it.
    const rate = isAudioFormatName(this.outputFormat) ? parseAudioFormat(this.outputFormat).sampleRate : null;
    const ready: Record<string, unknown> = {
      type: 'ready',
      request_id: this.ttsReady['request_id'],
      model_name: this.ttsReady['model_name'],
      sample_rate: rate ?? this.ttsReady['sample_rate'],
      frame_size: rate === null ? this.ttsReady['frame_size'] : Math.round(rate * 0.08),
      delay_in_frames: this.sttReady['delay_in_frames'] ?? 0,
    };
    let r = this.send(ready);
    for (const m of this.early.splice(0)) r = this.send(m);
    return r;
  }

  private send(m: Record<string, unknown>): unknown {
    if (this.closed) return undefined;
    if (this.clientReqId !== undefined) m = { ...m, client_req_id: this.clientReqId };
    if (!this.readySent && m['type'] !== 'ready') {
      this.early.push(m);
      return undefined;
    }
    return this.options.transport.send(JSON.stringify(m));
  }

  /** A runner's `error`: to the client as it came (with the request's id), then close with its code. */
  private failWith(m: Record<string, unknown>): undefined {
    const code = typeof m['code'] === 'number' ? m['code'] : 1011;
    const message = typeof m['message'] === 'string' ? m['message'] : 'error';
    const out: Record<string, unknown> = { type: 'error', message, code };
    if (this.clientReqId !== undefined) out['client_req_id'] = this.clientReqId;
    this.options.transport.send(JSON.stringify(out));
    this.close(code, message);
    return undefined;
  }

  fail(error: VoicewireError): void {
    if (this.closed) return;
    const msg = errorMessageOf(error, this.clientReqId);
    this.options.transport.send(serializeSttServerMessage(msg));
    this.close(msg.code ?? 1011, error.message);
  }

  private close(code: number, reason: string): void {
    if (this.closed) return;
    this.state = { phase: 'closed' };
    this.stt?.transportClosed();
    this.tts?.transportClosed();
    this.options.onEvent?.({ type: 'session_closed', code, reason });
    this.options.transport.close(code, reason.slice(0, 120));
  }

  transportClosed(): void {
    if (this.closed) return;
    this.state = { phase: 'closed' };
    this.stt?.transportClosed();
    this.tts?.transportClosed();
  }

  async whenIdle(): Promise<void> {
    await Promise.all([this.stt?.whenIdle(), this.tts?.whenIdle()]);
  }
}

/** Creates an s2s session over a transport (see the module comment). */
export function createS2sServerSession(options: S2sServerSessionOptions): ServerSession<S2sState> {
  return new S2sRunner(options);
}
