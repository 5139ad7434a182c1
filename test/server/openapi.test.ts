/**
 * /api/openapi.json: a valid OpenAPI 3.1 document (checked by a real validator), listing every
 * route the server has, whose enums and bounds the routes' own validators agree with (each
 * schema's edges are fed to the validator the route uses); /api/docs renders it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startServer, type Harness } from './harness.js';
import type { RouteModule } from '../../src/server/context.js';
import { probeRoutes } from '../../src/server/routes/probes.js';
import { ttsRoutes } from '../../src/server/routes/tts.js';
import { sttRoutes } from '../../src/server/routes/stt.js';
import { s2sRoutes } from '../../src/server/routes/s2s.js';
import { accountRoutes, usageSummaryRoutes } from '../../src/server/routes/account.js';
import { voiceRoutes, coreVoiceRoutes } from '../../src/server/routes/voices.js';
import { voiceDesignRoutes } from '../../src/server/routes/voice-design.js';
import { pronunciationRoutes, corePronunciationRoutes } from '../../src/server/routes/pronunciations.js';
import { openApiRoutes } from '../../src/server/routes/openapi.js';
import { openAIRoutes } from '../../src/server/routes/openai.js';
import {
  parseAsrQuery,
  parsePronunciationsListQuery,
  parseVoicesListQuery,
  readAsrQuery,
  readTtsRequestBody,
  readVoiceFromEmbeddingBody,
  readVoiceGenerationBody,
  validateTtsRequestBody,
  validateVoiceFromEmbeddingBody,
  validateVoiceGenerationBody,
} from '../../src/protocol/rest.js';
import { FORWARDED_METHODS } from '../../src/server/routes/forward.js';
import { readSttEngineSupport, readTtsJsonConfig, readVoiceGenerationJsonConfig, unsupportedSttConfigIssues } from '../../src/protocol/config.js';
import { keysRead } from '../../src/protocol/describe.js';
import { sttInputFormatFromContentType } from '../../src/sessions/http.js';
import { parseSpeechRequest } from '../../src/server/routes/openai/speech.js';
import { parseTranscriptionFields } from '../../src/server/routes/openai/transcriptions.js';
import { resolveServerConfig } from '../../src/server/config.js';

type Json = Record<string, any>;

let h: Harness;
let doc: Json;
beforeAll(async () => {
  h = await startServer({ limits: { maxTextChars: 500 } });
  const r = await fetch(`${h.base}/openapi.json`);
  expect(r.status).toBe(200);
  doc = (await r.json()) as Json;
});
afterAll(async () => {
  await h.close();
});

const schema = (name: string): Json => doc.components.schemas[name];
const deref = (s: Json): Json => (typeof s.$ref === 'string' ? schema(s.$ref.split('/').pop()!) : s);

/** Values at and just past each edge of a property's schema: [value, accepted?]. */
function edges(s: Json): Array<[unknown, boolean]> {
  s = deref(s);
  if (Array.isArray(s.anyOf)) s = deref(s.anyOf.find((x: Json) => x.type !== 'null') ?? {});
  const out: Array<[unknown, boolean]> = [];
  if (Array.isArray(s.enum)) {
    for (const v of s.enum) out.push([v, true]);
    out.push(['not-a-member', false]);
  }
  if (s.const !== undefined) {
    out.push([s.const, true]);
    if (typeof s.const === 'number') out.push([s.const + 0.5, false], [s.const - 0.5, false]);
  }
  if (typeof s.pattern === 'string') {
    // Samples on both sides of the pattern: the validator must agree with it on each.
    const re = new RegExp(s.pattern);
    for (const v of PATTERN_SAMPLES) out.push([v, re.test(v)]);
  }
  if ((s.type === 'integer' || s.type === 'number') && s.const === undefined) {
    const step = s.type === 'integer' ? 1 : 0.5;
    if (s.minimum !== undefined) out.push([s.minimum, true], [s.minimum - step, false]);
    if (s.maximum !== undefined) out.push([s.maximum, true], [s.maximum + step, false]);
    if (s.type === 'integer' && (s.minimum !== undefined || s.maximum !== undefined)) out.push([(s.minimum ?? 0) + 0.5, false]);
  }
  if (s.type === 'string' && s.enum === undefined && s.pattern === undefined) {
    if (s.minLength !== undefined) out.push(['x'.repeat(s.minLength), true]);
    if (s.minLength > 0) out.push(['', false]);
    if (s.maxLength !== undefined) out.push(['x'.repeat(s.maxLength), true], ['x'.repeat(s.maxLength + 1), false]);
  }
  return out;
}

/** Strings for a `pattern`: some it matches, some it does not (rewrite_rules' names and languages). */
const PATTERN_SAMPLES = ['en', 'TimeEn,Date', 'en,fr', ' en , fr ', ',en,,', 'NumberPt', '', ',', 'it', 'TimeEn,Klingon', 'en fr', 'EN', 'timeen'];

const accepts = (f: () => unknown): boolean => {
  try {
    f();
    return true;
  } catch {
    return false;
  }
};

/** Every property edge of `name` (and of one nested $ref object level) against `validate(body)`. */
function conform(name: string, base: Json, validate: (body: Json) => unknown, skip: string[] = []): number {
  let checked = 0;
  expect(accepts(() => validate(base)), `${name}: the base body`).toBe(true);
  const s = schema(name);
  for (const req of s.required ?? []) {
    const { [req]: _gone, ...without } = base;
    expect(accepts(() => validate(without)), `${name}: without required ${req}`).toBe(false);
    checked++;
  }
  for (const [prop, ps] of Object.entries<Json>(s.properties)) {
    if (skip.includes(prop)) continue;
    const inner = deref((ps as Json).anyOf?.find((x: Json) => x.$ref) ?? ps);
    if (inner.type === 'object' && inner.properties) {
      // Closed to other keys in the document: the validator refuses one too (and otherwise takes it).
      expect(accepts(() => validate({ ...base, [prop]: { zz_unknown: 1 } })), `${name}.${prop} with an unknown key`).toBe(inner.additionalProperties !== false);
      checked++;
      for (const [sub, ss] of Object.entries<Json>(inner.properties)) {
        for (const [v, ok] of edges(ss)) {
          expect(accepts(() => validate({ ...base, [prop]: { [sub]: v } })), `${name}.${prop}.${sub} = ${JSON.stringify(v)}`).toBe(ok);
          checked++;
        }
      }
      continue;
    }
    for (const [v, ok] of edges(ps)) {
      expect(accepts(() => validate({ ...base, [prop]: v })), `${name}.${prop} = ${JSON.stringify(v)}`).toBe(ok);
      checked++;
    }
  }
  return checked;
}

describe('/api/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator)', async () => {
    const v = new Validator();
    const res = await v.validate(doc);
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
    expect(v.version).toBe('3.1');
  });

  it('lists every route of every module, and only those; WebSockets as GET 101 x-websocket', () => {
    const modules: Array<[string, RouteModule]> = [
      ['/api', probeRoutes], ['/api', ttsRoutes], ['/api', sttRoutes], ['/api', s2sRoutes], ['/api', accountRoutes], ['/api', usageSummaryRoutes],
      ['/api', voiceRoutes], ['/api', coreVoiceRoutes], ['/api', voiceDesignRoutes], ['/api', pronunciationRoutes], ['/api', corePronunciationRoutes],
      ['/api', openApiRoutes], ['/v1', openAIRoutes],
    ];
    const toOpenApi = (p: string): string => p.replace(/:([A-Za-z_]+)/g, '{$1}');
    const served = new Set<string>(['get /metrics']);
    // The forwarding route (§4.13) is the router's fallback, not a module's route (issue 35: seen failing first, the document lacked it).
    for (const m of FORWARDED_METHODS) served.add(`${m.toLowerCase()} /api/{path}`);
    for (const [prefix, m] of modules) {
      for (const r of m.http ?? []) served.add(`${r.method.toLowerCase()} ${prefix}${toOpenApi(r.path)}`);
      for (const r of m.ws ?? []) served.add(`ws ${prefix}${toOpenApi(r.path)}`);
    }
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(ops)) {
        documented.add(op['x-websocket'] ? `ws ${path}` : `${method} ${path}`);
        if (op['x-websocket']) expect(Object.keys(op.responses)).toEqual(['101']);
        expect(op.summary, `${method} ${path} has a summary`).toBeTruthy();
        expect(Object.keys(op.responses).length).toBeGreaterThan(0);
      }
    }
    expect([...documented].sort()).toEqual([...served].sort());
  });

  it('every non-2xx form is described: §7 plain text / 422 JSON on /api, OpenAI errors on /v1', () => {
    expect(doc.paths['/api/post/speech/tts'].post.responses['422'].content['application/json'].schema.$ref).toBe('#/components/schemas/ValidationError');
    expect(doc.paths['/api/post/speech/tts'].post.responses['500'].content['text/plain']).toBeTruthy();
    for (const status of ['400', '401', '404', '413', '429', '500', '503']) {
      expect(doc.paths['/v1/audio/speech'].post.responses[status].content['application/json'].schema.$ref).toBe('#/components/schemas/OpenAIError');
    }
  });

  it('info.version is the edge description\'s (§9: 1.0.0); voicewire\'s own version is named in the description', () => {
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.info.description).toMatch(/voicewire version \S+/);
  });

  it('bounds follow the server\'s limits (maxTextChars 500 here)', () => {
    expect(schema('TtsRequest').properties.text.maxLength).toBe(500);
    expect(schema('OpenAISpeechRequest').properties.input.maxLength).toBe(500);
  });
});

describe('the document agrees with the validators the routes use', () => {
  const limits = resolveServerConfig({ limits: { maxTextChars: 500 } }, { tts: 'tone', stt: 'tone' }).limits;
  it('POST /api/post/speech/tts body (validateTtsRequestBody), json_config included', () => {
    expect(conform('TtsRequest', { text: 'hi' }, validateTtsRequestBody, ['text'])).toBeGreaterThan(35);
    // text: its minLength is the validator's ("" is a 422); its maxLength is the server's limit, checked when the request runs.
    expect(schema('TtsRequest').properties.text.minLength).toBe(1);
    expect(accepts(() => validateTtsRequestBody({ text: '' }))).toBe(false);
    expect(accepts(() => validateTtsRequestBody({ text: 'x' }))).toBe(true);
  });
  it('TTS json_config: rule lists as the route takes them ("TimeEn,Date"), no key besides §2.8\'s four', () => {
    const rr = deref(schema('TtsJsonConfig').properties.rewrite_rules.anyOf[0]);
    expect(new RegExp(rr.pattern).test('TimeEn,Date')).toBe(true);
    expect(accepts(() => validateTtsRequestBody({ text: 'hi', json_config: { rewrite_rules: 'TimeEn,Date' } }))).toBe(true);
    expect(Object.keys(schema('TtsJsonConfig').properties).sort()).toEqual(['cfg_coef', 'padding_bonus', 'rewrite_rules', 'temp']);
    expect(schema('TtsJsonConfig').additionalProperties).toBe(false);
    expect(schema('TtsJsonConfig').description).not.toMatch(/ignored/);
  });
  it('STT json_config as the server takes it (parseAsrQuery, then the server\'s pass): the documented ranges, no other key', () => {
    const sttServer = (b: Json): unknown => {
      const q = parseAsrQuery({ json_config: JSON.stringify(b.json_config ?? {}) });
      const issues = unsupportedSttConfigIssues(q.json_config ?? {}, ['query', 'json_config']);
      if (issues.length > 0) throw new Error(JSON.stringify(issues));
      return q;
    };
    const fake = { type: 'object', properties: { json_config: { $ref: '#/components/schemas/SttJsonConfig' } } };
    doc.components.schemas['__SttQuery'] = fake;
    try {
      expect(conform('__SttQuery', {}, sttServer)).toBeGreaterThan(8);
    } finally {
      delete doc.components.schemas['__SttQuery'];
    }
    const stt = schema('SttJsonConfig');
    expect(stt.additionalProperties).toBe(false);
    expect(deref(stt.properties.temp.anyOf[0])).toMatchObject({ minimum: 0, maximum: 1 });
    expect(deref(stt.properties.delay_in_frames.anyOf[0]).enum).toEqual([7, 8, 10, 12, 14, 16, 20, 24, 36, 48]);
  });
  it('every key a validator reads is in the document (read by running the validator against the describing reader), and no other', () => {
    const props = (name: string): string[] => Object.keys(schema(name).properties).sort();
    expect(props('TtsRequest')).toEqual(keysRead(readTtsRequestBody).sort());
    expect(props('TtsJsonConfig')).toEqual(keysRead(readTtsJsonConfig).sort());
    expect(props('SttJsonConfig')).toEqual(keysRead(readSttEngineSupport).sort());
    expect(props('VoiceGenerationRequest')).toEqual(keysRead(readVoiceGenerationBody).sort());
    expect(props('VoiceGenerationJsonConfig')).toEqual(keysRead(readVoiceGenerationJsonConfig).sort());
    expect(props('VoiceFromEmbeddingRequest')).toEqual(keysRead(readVoiceFromEmbeddingBody).sort());
    const asr = (doc.paths['/api/post/speech/asr'].post.parameters as Json[]).map((p) => p.name).sort();
    expect(asr).toEqual(keysRead(readAsrQuery).sort());
    // A bound the validator checks is the document's: the validator is the only source.
    expect(schema('VoiceGenerationRequest').properties.prompt.maxLength).toBe(500);
    expect(accepts(() => validateVoiceGenerationBody({ prompt: 'x'.repeat(501) }))).toBe(false);
  });
  it('POST /api/post/speech/asr: every Content-Type the route reads is listed, and each listed one is read', () => {
    const listed = Object.keys(doc.paths['/api/post/speech/asr'].post.requestBody.content);
    for (const t of ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave', 'audio/pcm', 'audio/ogg', 'audio/opus']) expect(listed).toContain(t);
    for (const t of listed) expect(() => sttInputFormatFromContentType(t), t).not.toThrow();
    const params = doc.paths['/api/post/speech/asr'].post.parameters as Json[];
    for (const p of params) for (const [v, ok] of edges(p.schema)) expect(accepts(() => parseAsrQuery({ [p.name]: String(v) })), `${p.name}=${v}`).toBe(ok);
  });
  it('GET /api/voices query (parseVoicesListQuery)', () => {
    const params = (doc.paths['/api/voices'].get.parameters as Json[]).filter((p) => p.name !== 'include_catalog');
    expect(params.map((p) => p.name)).toEqual(['limit', 'offset']);
    for (const p of params) for (const [v, ok] of edges(p.schema)) expect(accepts(() => parseVoicesListQuery({ [p.name]: String(v) })), `${p.name}=${v}`).toBe(ok);
  });
  it('voice design bodies', () => {
    expect(conform('VoiceGenerationRequest', { prompt: 'a calm voice' }, validateVoiceGenerationBody, ['json_config'])).toBeGreaterThan(10);
    expect(conform('VoiceFromEmbeddingRequest', { voice_embedding_id: 'e', name: 'n' }, validateVoiceFromEmbeddingBody)).toBeGreaterThan(3);
  });
  it('GET /api/pronunciations query (parsePronunciationsListQuery)', () => {
    const params = doc.paths['/api/pronunciations'].get.parameters as Json[];
    for (const p of params) for (const [v, ok] of edges(p.schema)) expect(accepts(() => parsePronunciationsListQuery({ [p.name]: String(v) })), `${p.name}=${v}`).toBe(ok);
  });
  it('POST /v1/audio/speech body (parseSpeechRequest)', () => {
    const parse = (b: Json): unknown => parseSpeechRequest(b, { ffmpeg: true, maxTextChars: limits.maxTextChars });
    expect(conform('OpenAISpeechRequest', { model: 'tts-1', input: 'hi', voice: 'alloy' }, parse, ['voice', 'instructions'])).toBeGreaterThan(15);
  });
  it('POST /v1/audio/transcriptions fields (parseTranscriptionFields)', () => {
    const parse = (b: Json): unknown => {
      // The route refuses a form without a file before it reads the fields' values (400, param file).
      if (b.file === undefined) throw new Error('file is required');
      const fields = new Map<string, string[]>();
      for (const [k, v] of Object.entries(b)) if (k !== 'file') fields.set(k, Array.isArray(v) ? v : [String(v)]);
      if (fields.has('timestamp_granularities[]')) fields.set('response_format', ['verbose_json']);
      return parseTranscriptionFields(fields);
    };
    const checked = conform('OpenAITranscriptionRequest', { model: 'whisper-1', file: 'x' }, parse, ['file', 'timestamp_granularities[]']);
    expect(checked).toBeGreaterThan(10);
    const g = schema('OpenAITranscriptionRequest').properties['timestamp_granularities[]'].items;
    for (const [v, ok] of edges(g)) expect(accepts(() => parse({ model: 'whisper-1', file: 'x', 'timestamp_granularities[]': [v] })), String(v)).toBe(ok);
  });
  it('the core routes\' inline validators, over HTTP: dictionary and rule bodies', async () => {
    const post = (path: string, body: unknown): Promise<number> =>
      fetch(`${h.base}${path}`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.status);
    const d = schema('DictionaryCreate');
    for (const [v, ok] of edges(d.properties.language)) expect(await post('/pronunciations', { name: 'd', language: v }), `language ${v}`).toBe(ok ? 200 : 422);
    const created = (await (await fetch(`${h.base}/pronunciations`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: JSON.stringify({ name: 'd', language: 'en' }) })).json()) as { uid: string };
    const rule = schema('PronunciationRule');
    for (const [v, ok] of edges(rule.properties.kind)) expect(await post(`/pronunciations/${created.uid}/rules`, { rules: [{ word: 'a', replacement: 'b', kind: v }] }), `kind ${v}`).toBe(ok ? 200 : 422);
    for (const [v, ok] of edges(rule.properties.word)) expect(await post(`/pronunciations/${created.uid}/rules`, { rules: [{ word: v, replacement: 'b' }] }), `word ${v}`).toBe(ok ? 200 : 422);
  });
});

describe('/api/docs', () => {
  it('is an HTML page made from the document: every path, every schema, no remote resource', async () => {
    const r = await fetch(`${h.base}/docs`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await r.text();
    for (const path of Object.keys(doc.paths)) expect(html).toContain(`<code>${path}</code>`);
    for (const name of Object.keys(doc.components.schemas)) expect(html).toContain(`id="schema-${name}"`);
    // What the validators add: a pattern (rewrite_rules), closed objects (json_config).
    expect(html).toContain('matching <code>');
    expect(html).toContain('No other key is accepted.');
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });
});
