import { describe, expect, it } from 'vitest';
import { VoicewireError } from '../../src/util/errors.js';
import {
  formatRestError,
  parseAsrQuery,
  parseCreatedVoice,
  parseCreditBalance,
  parseJsonBody,
  parsePronunciationList,
  parsePronunciationsListQuery,
  parseRestError,
  parseTemporaryToken,
  parseVoice,
  parseVoiceCandidate,
  parseVoiceGenerationResponse,
  parseVoiceList,
  parseVoicesListQuery,
  restErrorResponse,
  throwForResponse,
  validateSttJsonConfig,
  validateTtsJsonConfig,
  validateTtsRequestBody,
  validateVoiceFromEmbeddingBody,
  validateVoiceGenerationBody,
  validateVoiceGenerationJsonConfig,
  validationErrorBody,
  type ValidationErrorBody,
  type ValidationIssue,
} from '../../src/index.js';

function issues(f: () => unknown, code = 'VALIDATION_FAILED'): ValidationIssue[] {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(VoicewireError);
    expect((err as VoicewireError).code).toBe(code);
    const d = (err as VoicewireError).details as ValidationErrorBody | { issues: ValidationIssue[] };
    return 'detail' in d ? d.detail : d.issues;
  }
  throw new Error('expected a throw');
}

describe('json_config (docs/api.md §2.8, §2.9, §8)', () => {
  // Boundaries straight from the spec table: [value, accepted].
  const padding: Array<[number, boolean]> = [[-4, true], [-4.01, false], [-2, true], [-0.1, true], [-0.09, false], [-0.0, true], [0, true], [0.05, false], [0.1, true], [4, true], [4.000001, false]];
  const temp: Array<[number, boolean]> = [[0, true], [0.7, true], [1.4, true], [1.41, false], [-0.01, false]];
  const cfg: Array<[number, boolean]> = [[1, true], [2, true], [4, true], [0.99, false], [4.01, false]];
  it.each(padding)('padding_bonus %d accepted: %s', (v, ok) => {
    if (ok) expect(validateTtsJsonConfig({ padding_bonus: v })).toEqual({ padding_bonus: v });
    else expect(issues(() => validateTtsJsonConfig({ padding_bonus: v }), 'PROTOCOL_INVALID_CONFIG')[0]!.loc).toEqual(['json_config', 'padding_bonus']);
  });
  it.each(temp)('temp %d accepted: %s', (v, ok) => {
    if (ok) expect(validateTtsJsonConfig({ temp: v }).temp).toBe(v);
    else expect(issues(() => validateTtsJsonConfig({ temp: v }), 'PROTOCOL_INVALID_CONFIG')[0]!.type).toMatch(/^(greater|less)_than_equal$/);
  });
  it.each(cfg)('cfg_coef %d accepted: %s', (v, ok) => {
    if (ok) expect(validateTtsJsonConfig({ cfg_coef: v }).cfg_coef).toBe(v);
    else expect(() => validateTtsJsonConfig({ cfg_coef: v })).toThrow(VoicewireError);
  });

  it('pydantic-style issues: ranges carry ctx, the dead zone is a value_error', () => {
    expect(issues(() => validateTtsJsonConfig({ temp: 2 }), 'PROTOCOL_INVALID_CONFIG')).toEqual([
      { loc: ['json_config', 'temp'], msg: 'Input should be less than or equal to 1.4', type: 'less_than_equal', input: 2, ctx: { le: 1.4 } },
    ]);
    expect(issues(() => validateTtsJsonConfig({ cfg_coef: 0 }), 'PROTOCOL_INVALID_CONFIG')[0]).toMatchObject({ type: 'greater_than_equal', msg: 'Input should be greater than or equal to 1', ctx: { ge: 1 } });
    expect(issues(() => validateTtsJsonConfig({ padding_bonus: 0.05 }), 'PROTOCOL_INVALID_CONFIG')[0]).toMatchObject({ type: 'value_error', input: 0.05 });
    // A comma list of rule names and language aliases (protocol-notes.md "Rewrite rules").
    expect(issues(() => validateTtsJsonConfig({ rewrite_rules: 'it' }), 'PROTOCOL_INVALID_CONFIG')[0]).toMatchObject({ type: 'value_error', loc: ['json_config', 'rewrite_rules'] });
    expect(issues(() => validateTtsJsonConfig({ rewrite_rules: 'it' }), 'PROTOCOL_INVALID_CONFIG')[0]!.msg).toMatch(/^Value error, unknown rewrite rule 'it'/);
    expect(issues(() => validateTtsJsonConfig({ temp: '0.5' }), 'PROTOCOL_INVALID_CONFIG')[0]).toMatchObject({ type: 'float_type', msg: 'Input should be a valid number' });
    expect(issues(() => validateTtsJsonConfig('{oops'), 'PROTOCOL_INVALID_CONFIG')[0]).toMatchObject({ type: 'json_invalid', loc: ['json_config'] });
    expect(issues(() => validateTtsJsonConfig([1]), 'PROTOCOL_INVALID_CONFIG')[0]).toMatchObject({ type: 'dict_type' });
  });

  it('a string form validates like the object; unknown keys are refused (issue 21: never ignored); each language enables rewrite rules', () => {
    expect(validateTtsJsonConfig('{"temp":0,"cfg_coef":2}')).toEqual({ temp: 0, cfg_coef: 2 });
    expect(issues(() => validateTtsJsonConfig('{"temp":0,"x":[1],"voice":"a"}'), 'PROTOCOL_INVALID_CONFIG')).toEqual([
      { loc: ['json_config', 'x'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: [1] },
      { loc: ['json_config', 'voice'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: 'a' },
    ]);
    for (const lang of ['en', 'fr', 'de', 'es', 'pt']) expect(validateTtsJsonConfig({ rewrite_rules: lang }).rewrite_rules).toBe(lang);
  });

  it('voice generation settings: any finite number for the four keys (types unknown in §2.9)', () => {
    expect(validateVoiceGenerationJsonConfig({ cfg_scale: 3.5, steps: 20, seed: -1, utmos_score: 4.2 })).toEqual({ cfg_scale: 3.5, steps: 20, seed: -1, utmos_score: 4.2 });
    expect(issues(() => validateVoiceGenerationJsonConfig({ steps: 'many' }), 'PROTOCOL_INVALID_CONFIG')[0]!.loc).toEqual(['json_config', 'steps']);
  });

  it('STT settings: language, delay_in_frames, temp, padding_bonus', () => {
    expect(validateSttJsonConfig({ language: 'es', delay_in_frames: 24, temp: 0.2, padding_bonus: -1 })).toEqual({ language: 'es', delay_in_frames: 24, temp: 0.2, padding_bonus: -1 });
    expect(issues(() => validateSttJsonConfig({ delay_in_frames: 2.5 }), 'PROTOCOL_INVALID_CONFIG')[0]!.type).toBe('int_from_float');
    expect(issues(() => validateSttJsonConfig({ delay_in_frames: -1 }), 'PROTOCOL_INVALID_CONFIG')[0]!.type).toBe('value_error');
    expect(issues(() => validateSttJsonConfig({ language: 'EN' }), 'PROTOCOL_INVALID_CONFIG')[0]!.type).toBe('literal_error');
  });

  // Issue 35: the service's Python client documents delay_in_frames 7, 8, 10, 12, 14, 16, 20, 24, 36, 48 and
  // temp "up to 1"; padding_bonus has §8's range. Seen failing first: temp 0.3 and delay 7 passed, delay 2 and temp 5 too.
  const sttDelays = [7, 8, 10, 12, 14, 16, 20, 24, 36, 48];
  it.each([0, 1, 2, 6, 9, 11, 13, 15, 17, 23, 25, 47, 49, 96, ...sttDelays])('STT delay_in_frames %d accepted only from the documented list', (d) => {
    if (sttDelays.includes(d)) expect(validateSttJsonConfig({ delay_in_frames: d })).toEqual({ delay_in_frames: d });
    else {
      expect(issues(() => validateSttJsonConfig({ delay_in_frames: d }), 'PROTOCOL_INVALID_CONFIG')).toEqual([
        { loc: ['json_config', 'delay_in_frames'], msg: `Value error, delay_in_frames must be one of ${sttDelays.join(', ')}`, type: 'value_error', input: d, ctx: { error: `delay_in_frames must be one of ${sttDelays.join(', ')}` } },
      ]);
    }
  });
  const sttTemp: Array<[number, boolean]> = [[0, true], [0.3, true], [1, true], [1.01, false], [1.4, false], [-0.01, false]];
  it.each(sttTemp)('STT temp %d accepted: %s (0 to 1)', (v, ok) => {
    if (ok) expect(validateSttJsonConfig({ temp: v })).toEqual({ temp: v });
    else expect(issues(() => validateSttJsonConfig({ temp: v }), 'PROTOCOL_INVALID_CONFIG')[0]).toMatchObject({ loc: ['json_config', 'temp'], type: v < 0 ? 'greater_than_equal' : 'less_than_equal' });
  });
  const sttPadding: Array<[number, boolean]> = [[0, true], [-4, true], [4, true], [0.1, true], [-0.1, true], [0.05, false], [-0.09, false], [4.01, false], [-5, false]];
  it.each(sttPadding)('STT padding_bonus %d accepted: %s (§8, as TTS)', (v, ok) => {
    if (ok) expect(validateSttJsonConfig({ padding_bonus: v })).toEqual({ padding_bonus: v });
    else expect(issues(() => validateSttJsonConfig({ padding_bonus: v }), 'PROTOCOL_INVALID_CONFIG')[0]!.loc).toEqual(['json_config', 'padding_bonus']);
  });
});

describe('REST bodies (§4.2, §4.7, §4.8) and their 422 bodies (§2.7)', () => {
  it('TTS body: defaults applied', () => {
    expect(validateTtsRequestBody({ text: 'hi' })).toEqual({ text: 'hi', voice: null, voice_id: null, output_format: 'wav', model_name: 'default', json_config: {}, only_audio: false });
    expect(validateTtsRequestBody({ text: 'hi', voice_id: 'v', output_format: 'pcm_22050', json_config: '{"temp":1}', only_audio: 'true' })).toMatchObject({
      voice_id: 'v',
      output_format: 'pcm_22050',
      json_config: { temp: 1 },
      only_audio: true,
    });
  });

  it('TTS body: every problem is reported, with FastAPI locations and pydantic wording', () => {
    const detail = issues(() => validateTtsRequestBody({ output_format: 'mp3', only_audio: 'maybe', json_config: { temp: 9 } }));
    expect(detail).toEqual([
      { loc: ['body', 'text'], msg: 'Field required', type: 'missing' },
      {
        loc: ['body', 'output_format'],
        msg: "Input should be 'wav', 'pcm', 'opus', 'ulaw_8000', 'mulaw_8000', 'alaw_8000', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100' or 'pcm_48000'",
        type: 'literal_error',
        input: 'mp3',
        ctx: { expected: "'wav', 'pcm', 'opus', 'ulaw_8000', 'mulaw_8000', 'alaw_8000', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100' or 'pcm_48000'" },
      },
      { loc: ['body', 'json_config', 'temp'], msg: 'Input should be less than or equal to 1.4', type: 'less_than_equal', input: 9, ctx: { le: 1.4 } },
      { loc: ['body', 'only_audio'], msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing', input: 'maybe' },
    ]);
    expect(issues(() => validateTtsRequestBody([1, 2]))).toEqual([
      { loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type', input: [1, 2] },
    ]);
    expect(issues(() => validateTtsRequestBody({ text: 5 }))[0]).toEqual({ loc: ['body', 'text'], msg: 'Input should be a valid string', type: 'string_type', input: 5 });
  });

  it('voice generation: prompt 1–500 characters with actual text, n_samples 1–5, language', () => {
    expect(validateVoiceGenerationBody({ prompt: 'A calm voice' })).toEqual({ prompt: 'A calm voice', n_samples: 1, language: 'en' });
    expect(validateVoiceGenerationBody({ prompt: 'x'.repeat(500), n_samples: '5', language: 'pt', json_config: { seed: 1 } })).toEqual({
      prompt: 'x'.repeat(500),
      n_samples: 5,
      language: 'pt',
      json_config: { seed: 1 },
    });
    expect(issues(() => validateVoiceGenerationBody({ prompt: '' }))[0]).toEqual({
      loc: ['body', 'prompt'],
      msg: 'String should have at least 1 character',
      type: 'string_too_short',
      input: '',
      ctx: { min_length: 1 },
    });
    expect(issues(() => validateVoiceGenerationBody({ prompt: 'y'.repeat(501) }))[0]).toMatchObject({ msg: 'String should have at most 500 characters', type: 'string_too_long', ctx: { max_length: 500 } });
    expect(issues(() => validateVoiceGenerationBody({ prompt: '   \t ' }))[0]).toMatchObject({ type: 'value_error', loc: ['body', 'prompt'] });
    expect(issues(() => validateVoiceGenerationBody({ prompt: 'ok', n_samples: 0 }))[0]).toEqual({
      loc: ['body', 'n_samples'],
      msg: 'Input should be greater than or equal to 1',
      type: 'greater_than_equal',
      input: 0,
      ctx: { ge: 1 },
    });
    expect(issues(() => validateVoiceGenerationBody({ prompt: 'ok', n_samples: 6 }))[0]).toMatchObject({ type: 'less_than_equal', ctx: { le: 5 } });
    expect(issues(() => validateVoiceGenerationBody({ prompt: 'ok', n_samples: 2.5 }))[0]).toMatchObject({ type: 'int_from_float' });
    expect(issues(() => validateVoiceGenerationBody({ prompt: 'ok', n_samples: 'two' }))[0]).toMatchObject({ type: 'int_parsing' });
    expect(issues(() => validateVoiceGenerationBody({ prompt: 'ok', language: 'it' }))[0]).toMatchObject({ type: 'literal_error', loc: ['body', 'language'] });
    expect(issues(() => validateVoiceGenerationBody({}))[0]).toEqual({ loc: ['body', 'prompt'], msg: 'Field required', type: 'missing' });
  });

  it('create-from-candidate', () => {
    expect(validateVoiceFromEmbeddingBody({ voice_embedding_id: 'e1', name: 'N' })).toEqual({ voice_embedding_id: 'e1', name: 'N', description: '' });
    expect(issues(() => validateVoiceFromEmbeddingBody({ name: '' })).map((i) => [i.loc.join('.'), i.type])).toEqual([
      ['body.voice_embedding_id', 'missing'],
      ['body.name', 'string_too_short'],
    ]);
  });

  it('invalid JSON text is json_invalid', () => {
    expect(issues(() => parseJsonBody('{"a":'))[0]).toMatchObject({ type: 'json_invalid', msg: 'JSON decode error' });
    expect(parseJsonBody('{"a":1}')).toEqual({ a: 1 });
  });
});

describe('list queries (§4.10, §4.11): values arrive as strings', () => {
  it('voices: limit and offset ≥ 0', () => {
    expect(parseVoicesListQuery(new URLSearchParams(''))).toEqual({ offset: 0 });
    expect(parseVoicesListQuery(new URLSearchParams('limit=5000&offset=10'))).toEqual({ limit: 5000, offset: 10 });
    expect(parseVoicesListQuery({ limit: ['1', '2'] })).toEqual({ limit: 2, offset: 0 });
    expect(issues(() => parseVoicesListQuery(new URLSearchParams('offset=-1')))[0]).toEqual({
      loc: ['query', 'offset'],
      msg: 'Input should be greater than or equal to 0',
      type: 'greater_than_equal',
      input: '-1',
      ctx: { ge: 0 },
    });
  });
  it('pronunciations: limit 0–1000, offset ≥ 0; int parsing like pydantic', () => {
    expect(parsePronunciationsListQuery({ limit: '1000', offset: ' 3 ' })).toEqual({ limit: 1000, offset: 3 });
    expect(parsePronunciationsListQuery({ limit: '0' })).toEqual({ limit: 0, offset: 0 });
    expect(issues(() => parsePronunciationsListQuery({ limit: '1001' }))[0]).toMatchObject({ type: 'less_than_equal', ctx: { le: 1000 }, loc: ['query', 'limit'] });
    for (const bad of ['1.5', 'abc', '', '0x10', '1e3']) {
      expect(issues(() => parsePronunciationsListQuery({ offset: bad }))[0]).toEqual({
        loc: ['query', 'offset'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        type: 'int_parsing',
        input: bad,
      });
    }
  });
  it('ASR query (§4.3)', () => {
    expect(parseAsrQuery({})).toEqual({ model: 'default', input_format: null, json_config: null });
    expect(parseAsrQuery({ input_format: 'opus', json_config: '{"language":"de"}' })).toEqual({ model: 'default', input_format: 'opus', json_config: { language: 'de' } });
    expect(issues(() => parseAsrQuery({ json_config: '{"language":1}' }))[0]!.loc).toEqual(['query', 'json_config', 'language']);
  });
});

describe('REST error bodies (§7.1)', () => {
  it('formats and parses the upstream form; the proxy-level form has no code', () => {
    expect(formatRestError(1008, 'invalid API key')).toBe('error from server 1008: invalid API key');
    expect(parseRestError(500, 'error from server 1008: invalid API key')).toEqual({ code: 1008, message: 'invalid API key' });
    expect(parseRestError(500, formatRestError(1011, 'boom: twice'))).toEqual({ code: 1011, message: 'boom: twice' });
    expect(parseRestError(500, 'unsupported content type text/html')).toEqual({ message: 'unsupported content type text/html' });
    expect(parseRestError(500, '')).toEqual({ message: 'HTTP 500' });
    expect(parseRestError(401, '{"detail":"Unauthorized"}')).toEqual({ message: 'Unauthorized' });
    expect(parseRestError(422, JSON.stringify({ detail: [{ loc: ['body', 'prompt'], msg: 'Field required', type: 'missing' }] }))).toEqual({ message: 'body.prompt: Field required' });
  });

  it('throwForResponse turns a non-2xx fetch Response into HTTP_ERROR', async () => {
    const ok = new Response('fine', { status: 200 });
    expect(await throwForResponse(ok)).toBe(ok);
    const err = (await throwForResponse(new Response('error from server 1008: revoked key', { status: 500 })).catch((e: unknown) => e)) as VoicewireError;
    expect(err).toBeInstanceOf(VoicewireError);
    expect(err.code).toBe('HTTP_ERROR');
    expect(err.details).toMatchObject({ status: 500, code: 1008, message: 'revoked key' });
    expect(err.closeCode).toBe(1008);
    const body = { detail: [{ loc: ['query', 'limit'], msg: 'Input should be less than or equal to 1000', type: 'less_than_equal', input: '5000', ctx: { le: 1000 } }] };
    const e422 = (await throwForResponse(new Response(JSON.stringify(body), { status: 422 })).catch((e: unknown) => e)) as VoicewireError;
    expect((e422.details as { validation: unknown }).validation).toEqual(body);
  });

  it('restErrorResponse gives the service answers', () => {
    let caught: unknown;
    try {
      validateVoiceGenerationBody({});
    } catch (e) {
      caught = e;
    }
    const r = restErrorResponse(caught);
    expect(r.status).toBe(422);
    expect(JSON.parse(r.body)).toEqual(validationErrorBody(caught));
    expect(restErrorResponse(new VoicewireError('PROTOCOL_UNAUTHORIZED', 'bad key'))).toEqual({ status: 500, contentType: 'text/plain; charset=utf-8', body: 'error from server 1008: bad key' });
    expect(restErrorResponse(new VoicewireError('PROTOCOL_DRAINING', 'draining')).status).toBe(503);
    expect(restErrorResponse(new Error('unsupported content type x')).body).toBe('unsupported content type x');
  });
});

describe('resources (§2)', () => {
  it('voice, voice list; unknown fields dropped, null optional fields absent', () => {
    const v = { uid: 'u', name: 'N', is_catalog: true, is_pro_clone: false, description: 'd', filename: 'f.wav', start_s: 1.5, language: 'en', tags: [{ any: 1 }], extra: 1 };
    const { extra: _x, ...known } = v;
    expect(parseVoice(v)).toEqual(known);
    expect(parseVoice({ uid: 'u', description: null })).toEqual({ uid: 'u' });
    expect(parseVoiceList([{ uid: 'a' }, { uid: 'b' }])).toEqual([{ uid: 'a' }, { uid: 'b' }]);
    expect(issues(() => parseVoiceList([{ uid: 'a' }, { name: 'x' }]), 'RESOURCE_INVALID')[0]!.loc).toEqual([1, 'uid']);
    expect(issues(() => parseVoice({ uid: 'u', is_catalog: 'yes' }), 'RESOURCE_INVALID')[0]!.type).toBe('bool_type');
  });
  it('candidates and the generation response: date-times checked', () => {
    const c = { embedding_id: 'e', ready: true, expires_at: '2025-02-28T23:59:59.123+01:00' };
    expect(parseVoiceCandidate(c)).toEqual(c);
    expect(parseVoiceGenerationResponse({ embeddings: [c] })).toEqual({ embeddings: [c] });
    for (const bad of ['2025-02-30T00:00:00Z', 'yesterday', '2025-13-01T00:00:00Z', '2025-01-01T24:00:00Z']) {
      expect(issues(() => parseVoiceCandidate({ ...c, expires_at: bad }), 'RESOURCE_INVALID')[0]!.type).toBe('datetime_parsing');
    }
    expect(issues(() => parseVoiceGenerationResponse({}), 'RESOURCE_INVALID')[0]!.type).toBe('missing');
  });
  it('created voice, pronunciation list, credits (plan_name defaults to ""), token', () => {
    expect(parseCreatedVoice({ uid: 'u', name: 'n', description: 'd', language: 'fr' })).toEqual({ uid: 'u', name: 'n', description: 'd', language: 'fr' });
    const dict = { uid: 'p', name: 'n', language: 'en', org_uid: '123e4567-e89b-12d3-a456-426614174000', created_at: '2024-01-01T00:00:00Z', description: '', rules: [] };
    expect(parsePronunciationList({ dictionaries: [dict], total: 1 })).toEqual({ dictionaries: [dict], total: 1 });
    expect(issues(() => parsePronunciationList({ dictionaries: [{ ...dict, org_uid: 'nope' }], total: 1 }), 'RESOURCE_INVALID')[0]).toMatchObject({ loc: ['dictionaries', 0, 'org_uid'], type: 'uuid_parsing' });
    expect(parseCreditBalance({ remaining_credits: 5, allocated_credits: 10, billing_period: 'monthly', next_rollover_date: '2024-02-29' })).toEqual({
      remaining_credits: 5,
      allocated_credits: 10,
      billing_period: 'monthly',
      next_rollover_date: '2024-02-29',
      plan_name: '',
    });
    expect(issues(() => parseCreditBalance({ remaining_credits: 5, allocated_credits: 10, next_rollover_date: '2023-02-29' }), 'RESOURCE_INVALID')[0]!.type).toBe('date_parsing');
    expect(issues(() => parseCreditBalance({ remaining_credits: 1.5, allocated_credits: 10 }), 'RESOURCE_INVALID')[0]!.type).toBe('int_from_float');
    expect(parseTemporaryToken({ token: 't', expires_at: '2030-01-01T00:00:00Z' })).toEqual({ token: 't', expires_at: '2030-01-01T00:00:00Z' });
    expect(issues(() => parseTemporaryToken({ token: 't' }), 'RESOURCE_INVALID')[0]).toMatchObject({ loc: ['expires_at'], type: 'missing' });
  });
});
