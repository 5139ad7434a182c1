import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { VoicewireError } from '../../src/util/errors.js';
import {
  decodeBase64,
  encodeBase64,
  parseSttClientMessage,
  parseSttServerMessage,
  parseTtsClientMessage,
  parseTtsServerMessage,
  readyDelayInFrames,
  serializeSttAudioMessage,
  serializeSttClientMessage,
  serializeSttServerMessage,
  serializeTtsAudioMessage,
  serializeTtsClientMessage,
  serializeTtsServerMessage,
  type ProtocolErrorDetails,
} from '../../src/index.js';
import { caught as thrown } from '../helpers/errors.js';


describe('base64 (RFC 4648 §4), against Node Buffer as the oracle', () => {
  it('encodes like Buffer for every length 0..64 and an 80 ms frame', () => {
    for (const n of [...Array.from({ length: 65 }, (_, i) => i), 3840, 7680, 10001]) {
      const bytes = new Uint8Array(n);
      for (let i = 0; i < n; i++) bytes[i] = (i * 131 + 7) & 255;
      expect(encodeBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
      expect(Buffer.from(decodeBase64(Buffer.from(bytes).toString('base64'))).equals(Buffer.from(bytes))).toBe(true);
    }
  });

  it('round-trips random bytes, including views with an offset', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.nat(5), (bytes, off) => {
        const view = bytes.subarray(Math.min(off, bytes.length));
        const b64 = encodeBase64(view);
        expect(b64).toBe(Buffer.from(view).toString('base64'));
        expect(Array.from(decodeBase64(b64))).toEqual(Array.from(view));
      }),
      { numRuns: 200 },
    );
  });

  it('accepts missing padding and rejects what is not base64', () => {
    expect(Array.from(decodeBase64('AQ'))).toEqual([1]);
    expect(Array.from(decodeBase64('AQI'))).toEqual([1, 2]);
    for (const bad of ['A', 'AAAAA', 'AA=A', 'A===', 'AB C', 'AB-_', 'AAA\u0141', '\u0100AAA', 'AA==AA==']) {
      const e = thrown(() => decodeBase64(bad));
      expect(e.code).toBe('INVALID_ARGUMENT');
    }
  });

  it('random strings either decode exactly as Buffer does or throw a VoicewireError', () => {
    const valid = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'AZaz09+/=-_ \u00e9\u0100'.split('')), maxLength: 24 }), (s) => {
        let out: Uint8Array | null = null;
        try {
          out = decodeBase64(s);
        } catch (err) {
          expect(err).toBeInstanceOf(VoicewireError);
        }
        if (valid.test(s)) expect(out && Array.from(out)).toEqual(Array.from(Buffer.from(s, 'base64')));
        else expect(out).toBeNull();
      }),
      { numRuns: 400 },
    );
  });
});

describe('STT client messages (docs/api.md §4.4)', () => {
  it('parses setup with every field; json_config may be a string; unknown fields are dropped', () => {
    const m = parseSttClientMessage(
      JSON.stringify({
        type: 'setup',
        model_name: 'm',
        input_format: 'pcm_16000',
        json_config: JSON.stringify({ language: 'fr', delay_in_frames: 12, extra: 1 }),
        client_req_id: 'r',
        close_ws_on_eos: false,
        retry_for_s: 2.5,
        unknown: { deep: true },
      }),
    );
    expect(m).toEqual({
      type: 'setup',
      model_name: 'm',
      input_format: 'pcm_16000',
      json_config: { language: 'fr', delay_in_frames: 12, extra: 1 },
      client_req_id: 'r',
      close_ws_on_eos: false,
      retry_for_s: 2.5,
    });
    expect(parseSttClientMessage({ type: 'setup' })).toEqual({ type: 'setup' });
    expect(parseSttClientMessage({ type: 'setup', model_name: null, json_config: null })).toEqual({ type: 'setup' });
  });

  it('accepts every STT input format and refuses others with PROTOCOL_INVALID_AUDIO_FORMAT (1008)', () => {
    for (const f of ['pcm', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100', 'pcm_48000', 'wav', 'opus', 'ulaw_8000', 'mulaw_8000', 'alaw_8000']) {
      expect(parseSttClientMessage({ type: 'setup', input_format: f })).toEqual({ type: 'setup', input_format: f });
    }
    for (const f of ['mp3', 'PCM', 'pcm_32000', '']) {
      const e = thrown(() => parseSttClientMessage({ type: 'setup', input_format: f, client_req_id: 'q' }));
      expect(e.code).toBe('PROTOCOL_INVALID_AUDIO_FORMAT');
      expect(e.closeCode).toBe(1008);
      expect((e.details as ProtocolErrorDetails).clientReqId).toBe('q');
      expect((e.details as ProtocolErrorDetails).issues[0]).toMatchObject({ loc: ['input_format'], type: 'literal_error' });
    }
  });

  it('a malformed setup is PROTOCOL_INVALID_SETUP, a bad json_config PROTOCOL_INVALID_CONFIG (both 1008)', () => {
    for (const bad of [{ model_name: 3 }, { close_ws_on_eos: 'false' }, { retry_for_s: -1 }, { retry_for_s: 'x' }]) {
      const e = thrown(() => parseSttClientMessage({ type: 'setup', ...bad }));
      expect(e.code).toBe('PROTOCOL_INVALID_SETUP');
      expect(e.closeCode).toBe(1008);
    }
    for (const bad of [{ language: 'it' }, { delay_in_frames: 1.5 }, { delay_in_frames: 2 }, { temp: -1 }, { temp: 1.2 }, { padding_bonus: 0.05 }, '{not json', [1]]) {
      const e = thrown(() => parseSttClientMessage({ type: 'setup', json_config: bad }));
      expect(e.code).toBe('PROTOCOL_INVALID_CONFIG');
      expect(e.closeCode).toBe(1008);
    }
  });

  it('audio, flush (integer or string id, kept as received) and end_of_stream', () => {
    expect(parseSttClientMessage('{"type":"audio","audio":"AAAA","client_req_id":"a"}')).toEqual({ type: 'audio', audio: 'AAAA', client_req_id: 'a' });
    expect(parseSttClientMessage('{"type":"flush","flush_id":7}')).toEqual({ type: 'flush', flush_id: 7 });
    expect(parseSttClientMessage('{"type":"flush","flush_id":"7"}')).toEqual({ type: 'flush', flush_id: '7' });
    expect(parseSttClientMessage('{"type":"end_of_stream","client_req_id":"z"}')).toEqual({ type: 'end_of_stream', client_req_id: 'z' });
    expect(parseSttClientMessage(new TextEncoder().encode('{"type":"end_of_stream"}'))).toEqual({ type: 'end_of_stream' });
  });

  it('wrong types are PROTOCOL_INVALID_MESSAGE (1008) and name the field', () => {
    const cases: Array<[unknown, string]> = [
      [{ type: 'audio' }, 'audio'],
      [{ type: 'audio', audio: 5 }, 'audio'],
      [{ type: 'flush' }, 'flush_id'],
      [{ type: 'flush', flush_id: 1.5 }, 'flush_id'],
      [{ type: 'flush', flush_id: true }, 'flush_id'],
      [{ type: 'flush', flush_id: null }, 'flush_id'],
      [{ type: 'end_of_stream', client_req_id: 3 }, 'client_req_id'],
      [{ type: 7 }, 'type'],
      [{}, 'type'],
      [{ type: 'text', text: 'x' }, 'type'],
    ];
    for (const [msg, field] of cases) {
      const e = thrown(() => parseSttClientMessage(msg));
      expect(e.code, JSON.stringify(msg)).toBe('PROTOCOL_INVALID_MESSAGE');
      expect(e.closeCode).toBe(1008);
      expect((e.details as ProtocolErrorDetails).issues.map((i) => i.loc[0])).toContain(field);
    }
    for (const raw of ['not json', '[1,2]', 'null', '"setup"', '', new Uint8Array([0xff, 0xfe]), 42]) {
      expect(thrown(() => parseSttClientMessage(raw)).code).toBe('PROTOCOL_INVALID_MESSAGE');
    }
  });

  it('keeps client_req_id in the error details when the message had a valid one', () => {
    const e = thrown(() => parseSttClientMessage({ type: 'audio', audio: 1, client_req_id: 'abc' }));
    expect((e.details as ProtocolErrorDetails).clientReqId).toBe('abc');
    expect((e.details as ProtocolErrorDetails).type).toBe('audio');
  });
});

describe('STT server messages', () => {
  const step = { type: 'step', vad: [{ horizon_s: 0.5, inactivity_prob: 0.1 }, { horizon_s: 1, inactivity_prob: 0.2 }, { horizon_s: 2, inactivity_prob: 0.9 }], step_idx: 4, step_duration_s: 0.08, total_duration_s: 0.4 };
  it('parses every type; legacy vad type kept; ready delay under either name', () => {
    const ready = { type: 'ready', request_id: 'r', model_name: 'm', sample_rate: 24000, frame_size: 1920, delay_in_frames: 6, text_stream_names: ['a'] };
    expect(parseSttServerMessage(ready)).toEqual(ready);
    const legacy = parseSttServerMessage({ ...ready, delay_in_frames: undefined, delay_in_tokens: 5 });
    expect(readyDelayInFrames(legacy as never)).toBe(5);
    expect(readyDelayInFrames(parseSttServerMessage(ready) as never)).toBe(6);
    expect(parseSttServerMessage({ type: 'text', text: 'hi', start_s: 1.2, stream_id: null })).toEqual({ type: 'text', text: 'hi', start_s: 1.2, stream_id: null });
    expect(parseSttServerMessage({ type: 'end_text', stop_s: 2, stream_id: 1, client_req_id: 'q' })).toEqual({ type: 'end_text', stop_s: 2, stream_id: 1, client_req_id: 'q' });
    expect(parseSttServerMessage(step)).toEqual(step);
    expect(parseSttServerMessage({ ...step, type: 'vad' })).toEqual({ ...step, type: 'vad' });
    expect(parseSttServerMessage({ type: 'flushed', flush_id: 'x1' })).toEqual({ type: 'flushed', flush_id: 'x1' });
    expect(parseSttServerMessage({ type: 'end_of_stream' })).toEqual({ type: 'end_of_stream' });
    expect(parseSttServerMessage({ type: 'error', message: 'bad', code: 1008 })).toEqual({ type: 'error', message: 'bad', code: 1008 });
    expect(parseSttServerMessage({ type: 'error', message: 'ndjson form' })).toEqual({ type: 'error', message: 'ndjson form' });
  });

  it('rejects malformed server messages', () => {
    for (const bad of [
      { type: 'ready', request_id: 'r', model_name: 'm', sample_rate: '24000', frame_size: 1920 },
      { type: 'ready', model_name: 'm', sample_rate: 24000, frame_size: 1920 },
      { type: 'text', text: 'x' },
      { ...step, vad: [{ horizon_s: 1 }] },
      { ...step, vad: 'no' },
      { ...step, step_idx: -1 },
      { type: 'error', code: 1008 },
      { type: 'error', message: 'x', code: 'E' },
      { type: 'flushed' },
      { type: 'need_more_text' },
    ]) {
      expect(thrown(() => parseSttServerMessage(bad)).code, JSON.stringify(bad)).toBe('PROTOCOL_INVALID_MESSAGE');
    }
  });
});

describe('TTS messages (docs/api.md §4.5, protocol-notes.md)', () => {
  it('client: setup with every field, text, end_of_stream', () => {
    const setup = { type: 'setup', model_name: 'm', voice_id: 'v', output_format: 'mulaw_8000', pronunciation_id: 'p', json_config: { temp: 0.5, rewrite_rules: 'de' }, client_req_id: 'c', close_ws_on_eos: false };
    expect(parseTtsClientMessage({ ...setup, extra: 1 })).toEqual(setup);
    expect(parseTtsClientMessage({ ...setup, json_config: '{"cfg_coef":3}' })).toEqual({ ...setup, json_config: { cfg_coef: 3 } });
    expect(parseTtsClientMessage({ type: 'text', text: 'Hello <flush>' })).toEqual({ type: 'text', text: 'Hello <flush>' });
    expect(parseTtsClientMessage({ type: 'end_of_stream', client_req_id: 'c' })).toEqual({ type: 'end_of_stream', client_req_id: 'c' });
  });

  it('client: bad format, bad config, bad fields, unknown types', () => {
    expect(thrown(() => parseTtsClientMessage({ type: 'setup', output_format: 'mp3' })).code).toBe('PROTOCOL_INVALID_AUDIO_FORMAT');
    // A json_config key §2.8 does not list is refused, never kept and ignored (issue 21).
    for (const c of [{ temp: 1.5 }, { cfg_coef: 0.5 }, { padding_bonus: 0.05 }, { rewrite_rules: 'it' }, { seed: 1 }, '{"temp":0.5,"beam":4}']) {
      expect(thrown(() => parseTtsClientMessage({ type: 'setup', json_config: c })).code, JSON.stringify(c)).toBe('PROTOCOL_INVALID_CONFIG');
    }
    expect(thrown(() => parseTtsClientMessage({ type: 'setup', json_config: { beam: 4 } })).details).toMatchObject({ issues: [{ loc: ['json_config', 'beam'], type: 'extra_forbidden' }] });
    // Keys of the setup itself that the server does not use are still ignored (protocol-notes.md: retry_for_s, voice).
    expect(parseTtsClientMessage({ type: 'setup', retry_for_s: 5, voice: 'x' })).toEqual({ type: 'setup' });
    expect(thrown(() => parseTtsClientMessage({ type: 'setup', voice_id: 5 })).code).toBe('PROTOCOL_INVALID_SETUP');
    expect(thrown(() => parseTtsClientMessage({ type: 'text' })).code).toBe('PROTOCOL_INVALID_MESSAGE');
    expect(thrown(() => parseTtsClientMessage({ type: 'audio', audio: '' })).code).toBe('PROTOCOL_INVALID_MESSAGE');
  });

  it('server: ready, audio (times optional), word timestamps, need_more_text, end_of_stream, error', () => {
    const ready = { type: 'ready', request_id: 'r', model_name: 'm', sample_rate: 48000, frame_size: 3840, audio_stream_names: ['a'], text_stream_names: ['t'], client_req_id: 'c' };
    expect(parseTtsServerMessage(ready)).toEqual(ready);
    expect(parseTtsServerMessage({ type: 'audio', audio: 'AAAA' })).toEqual({ type: 'audio', audio: 'AAAA' });
    const audio = { type: 'audio', audio: 'AAAA', start_s: 0.08, stop_s: 0.16, stream_id: 0, client_req_id: 'c' };
    expect(parseTtsServerMessage(audio)).toEqual(audio);
    const word = { type: 'text', text: 'hi', start_s: 0, stop_s: 0.08, stream_id: 0 };
    expect(parseTtsServerMessage(word)).toEqual(word);
    expect(parseTtsServerMessage({ type: 'need_more_text' })).toEqual({ type: 'need_more_text' });
    expect(thrown(() => parseTtsServerMessage({ type: 'text', text: 'hi', start_s: 0 })).code).toBe('PROTOCOL_INVALID_MESSAGE');
    expect(thrown(() => parseTtsServerMessage({ type: 'step' })).code).toBe('PROTOCOL_INVALID_MESSAGE');
  });
});

describe('serializers', () => {
  it('the hand-built audio lines equal JSON.stringify of the same object (oracle)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 300 }),
        fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: undefined }),
        fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: undefined }),
        fc.option(fc.oneof(fc.integer(), fc.constant(null)), { nil: undefined }),
        fc.option(fc.string(), { nil: undefined }),
        (bytes, start, stop, sid, id) => {
          const b64 = Buffer.from(bytes).toString('base64');
          const fields: Record<string, unknown> = {};
          if (start !== undefined) fields['start_s'] = start;
          if (stop !== undefined) fields['stop_s'] = stop;
          if (sid !== undefined) fields['stream_id'] = sid;
          if (id !== undefined) fields['client_req_id'] = id;
          expect(serializeTtsAudioMessage(bytes, fields)).toBe(JSON.stringify({ type: 'audio', audio: b64, ...fields }));
          expect(serializeSttAudioMessage(bytes, id)).toBe(JSON.stringify({ type: 'audio', audio: b64, client_req_id: id }));
          expect(parseTtsServerMessage(serializeTtsAudioMessage(bytes, fields))).toEqual(JSON.parse(JSON.stringify({ type: 'audio', audio: b64, ...fields })));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('an audio string that is not base64 is escaped (never spliced raw)', () => {
    const evil = 'A"}, "type":"error';
    expect(JSON.parse(serializeTtsServerMessage({ type: 'audio', audio: evil }))).toEqual({ type: 'audio', audio: evil });
    expect(JSON.parse(serializeSttClientMessage({ type: 'audio', audio: evil }))).toEqual({ type: 'audio', audio: evil });
  });

  it('every message round-trips through serialize and parse', () => {
    const stt = [
      { type: 'ready', request_id: 'r', model_name: 'm', sample_rate: 24000, frame_size: 1920, delay_in_frames: 3 },
      { type: 'text', text: 'a "quoted" \u2028 word', start_s: 0.5, client_req_id: 'x' },
      { type: 'end_text', stop_s: 1, stream_id: null },
      { type: 'step', vad: [{ horizon_s: 2, inactivity_prob: 0.7 }], step_idx: 0, step_duration_s: 0.08, total_duration_s: 0.08 },
      { type: 'flushed', flush_id: 'id' },
      { type: 'end_of_stream' },
      { type: 'error', message: 'm', code: 1011 },
    ] as const;
    for (const m of stt) expect(parseSttServerMessage(serializeSttServerMessage(m as never))).toEqual(m);
    for (const m of [{ type: 'setup', input_format: 'opus', json_config: { language: 'pt' } }, { type: 'audio', audio: 'AAAA' }, { type: 'flush', flush_id: 3 }, { type: 'end_of_stream' }] as const) {
      expect(parseSttClientMessage(serializeSttClientMessage(m as never))).toEqual(m);
    }
    for (const m of [{ type: 'setup', voice_id: 'v' }, { type: 'text', text: '<break time="1s" />' }, { type: 'end_of_stream', client_req_id: 'q' }] as const) {
      expect(parseTtsClientMessage(serializeTtsClientMessage(m as never))).toEqual(m);
    }
  });
});

describe('fuzz: garbage in raises only VoicewireError', () => {
  const parsers = [parseSttClientMessage, parseSttServerMessage, parseTtsClientMessage, parseTtsServerMessage];
  const key = fc.constantFrom('type', 'audio', 'flush_id', 'client_req_id', 'text', 'json_config', 'input_format', 'output_format', 'vad', 'step_idx', 'message', 'code', 'start_s', 'stop_s', '__proto__', 'constructor');
  const typeValue = fc.constantFrom('setup', 'audio', 'flush', 'end_of_stream', 'text', 'ready', 'step', 'vad', 'flushed', 'error', 'need_more_text', 'end_text', 'x');
  const message = fc.dictionary(key, fc.oneof(fc.jsonValue(), typeValue), { maxKeys: 6 });
  it('random objects, JSON texts and strings', () => {
    fc.assert(
      fc.property(fc.oneof(message, fc.jsonValue(), fc.string(), message.map((m) => JSON.stringify(m))), (input) => {
        for (const parse of parsers) {
          try {
            parse(input);
          } catch (err) {
            expect(err).toBeInstanceOf(VoicewireError);
            expect([1008, 1011]).toContain((err as VoicewireError).closeCode);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
