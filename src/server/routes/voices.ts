/**
 * Voices: GET /voices/ (§4.10, an edge route) and, without --core-url, the core routes the
 * service's own clients call: POST /voices/ (multipart: `audio_file`, `name`, `start_s`,
 * `description`, `input_format`), GET/PUT/DELETE /voices/{uid}.
 *
 * GET /voices/ query (names are voicewire's, §4.10 does not show them): `limit` (≥ 0; absent or 0:
 * every voice, which is what `limit=0&include_catalog=1` of the Python client expects), `offset`
 * (≥ 0, default 0), `include_catalog` (boolean, default true).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import busboy from 'busboy';
import { VoicewireError } from '../../util/errors.js';
import { parseVoicesListQuery } from '../../protocol/rest.js';
import { parseLaxBoolean, makeIssue } from '../../protocol/validate.js';
import { STT_INPUT_FORMATS } from '../../audio/format.js';
import { readJson, sendJson } from '../http.js';
import { onRequestGone } from '../request-gone.js';
import { validate } from '../validation.js';
import { assertStorable } from '../storable.js';
import type { RouteModule } from '../context.js';
import type { VoiceRecord } from '../store/store.js';

/** A stored voice as the API shows it (§2.1). */
export function voiceResource(v: VoiceRecord): Record<string, unknown> {
  return {
    uid: v.uid,
    name: v.name,
    is_catalog: v.orgId === null,
    is_pro_clone: v.isProClone,
    description: v.description,
    filename: v.filename,
    start_s: v.startS,
    language: v.language,
    tags: v.tags,
  };
}

const notFound = (what: string): VoicewireError => new VoicewireError('NOT_FOUND', `${what} not found`);

interface Upload {
  fields: Record<string, string>;
  file: { name: string; bytes: number } | null;
}

/** Reads a multipart form with busboy: fields, and the `audio_file` size (the bytes are counted, not kept: no cloning engine yet). */
function readMultipart(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<Upload> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { fileSize: maxBytes, files: 1, fields: 20 } });
    } catch (err) {
      reject(new VoicewireError('VALIDATION_FAILED', 'expected a multipart/form-data body', { details: { detail: [makeIssue(['body'], 'model_attributes_type', (err as Error).message)] } }));
      return;
    }
    const out: Upload = { fields: {}, file: null };
    bb.on('field', (name, value) => (out.fields[name] = value));
    bb.on('file', (name, stream, info) => {
      // A form cut short destroys the part with an error: the form's own, reported once.
      stream.on('error', () => undefined);
      let bytes = 0;
      stream.on('data', (d: Buffer) => (bytes += d.length));
      stream.on('limit', () => reject(new VoicewireError('LIMIT_EXCEEDED', `audio_file is over the limit of ${maxBytes} bytes`)));
      stream.on('end', () => {
        if (name === 'audio_file') out.file = { name: info.filename ?? 'audio', bytes };
      });
    });
    // A client gone mid-upload: busboy's 'close' never comes (issue 31 §1), the read ends here.
    const stop = onRequestGone(req, res, () => {
      req.unpipe(bb);
      bb.destroy();
      reject(new VoicewireError('PROTOCOL_CONNECTION_CLOSED', 'the client went away before its upload ended'));
    });
    bb.on('error', (err) => (stop(), reject(err)));
    bb.on('close', () => (stop(), resolve(out)));
    req.pipe(bb);
  });
}

export const voiceRoutes: RouteModule = {
  http: [
    {
      method: 'GET',
      path: '/voices',
      handle: async ({ ctx, url }, req, res) => {
        const { org } = await ctx.auth(req, { allowToken: true }); // the web page lists voices with its token
        const q = parseVoicesListQuery(url.searchParams);
        const raw = url.searchParams.get('include_catalog');
        const includeCatalog = raw === null ? true : parseLaxBoolean(raw);
        if (includeCatalog === undefined) {
          throw new VoicewireError('VALIDATION_FAILED', 'query.include_catalog: not a boolean', { details: { detail: [makeIssue(['query', 'include_catalog'], 'bool_parsing', raw)] } });
        }
        const page = await ctx.store.listVoices(org.id, { includeCatalog, limit: q.limit === undefined || q.limit === 0 ? null : q.limit, offset: q.offset });
        sendJson(res, 200, page.items.map(voiceResource));
      },
    },
  ],
};

export const coreVoiceRoutes: RouteModule = {
  http: [
    {
      method: 'POST',
      path: '/voices',
      handle: async ({ ctx, log }, req, res) => {
        const { org } = await ctx.auth(req);
        const upload = await readMultipart(req, res, ctx.config.limits.maxAudioBytes);
        const f = validate(upload.fields, 'body', (r) => ({
          name: r.string('name', { required: true, minLength: 1 }),
          start_s: r.number('start_s', { ge: 0 }),
          description: r.string('description'),
          input_format: r.literal('input_format', STT_INPUT_FORMATS),
        }));
        assertStorable({ ...f });
        if (upload.file === null || upload.file.bytes === 0) {
          throw new VoicewireError('VALIDATION_FAILED', 'body.audio_file: Field required', { details: { detail: [makeIssue(['body', 'audio_file'], 'missing', undefined)] } });
        }
        const voice: VoiceRecord = {
          uid: randomUUID(),
          orgId: org.id,
          name: f.name!,
          description: f.description ?? '',
          language: 'en',
          filename: upload.file.name,
          startS: f.start_s ?? 0,
          tags: [],
          isProClone: false,
          params: { engine: ctx.config.tts, sampleBytes: upload.file.bytes, inputFormat: f.input_format ?? null },
          createdAt: new Date().toISOString(),
        };
        await ctx.store.putVoice(voice);
        log.info({ voice: voice.uid }, 'voice created from a sample');
        sendJson(res, 200, voiceResource(voice));
      },
    },
    {
      method: 'GET',
      path: '/voices/:uid',
      handle: async ({ ctx, params }, req, res) => {
        const { org } = await ctx.auth(req);
        const v = await ctx.store.getVoice(org.id, params['uid']!);
        if (v === undefined) throw notFound('voice');
        sendJson(res, 200, voiceResource(v));
      },
    },
    {
      method: 'PUT',
      path: '/voices/:uid',
      handle: async ({ ctx, params }, req, res) => {
        const { org } = await ctx.auth(req);
        const body = await readJson(req, ctx.config.limits.maxJsonBytes, ctx.config.limits.maxJsonDepth);
        const patch = validate(body, 'body', (r) => {
          const p: { name?: string; description?: string; tags?: string[] } = {};
          const name = r.string('name', { minLength: 1 });
          const description = r.string('description');
          const tags = r.stringArray('tags');
          if (name !== undefined) p.name = name;
          if (description !== undefined) p.description = description;
          if (tags !== undefined) p.tags = tags;
          return p;
        });
        assertStorable({ ...patch });
        const v = await ctx.store.updateVoice(org.id, params['uid']!, patch);
        if (v === undefined) throw notFound('voice');
        sendJson(res, 200, voiceResource(v));
      },
    },
    {
      method: 'DELETE',
      path: '/voices/:uid',
      handle: async ({ ctx, params }, req, res) => {
        const { org } = await ctx.auth(req);
        if (!(await ctx.store.deleteVoice(org.id, params['uid']!))) throw notFound('voice');
        sendJson(res, 200, { uid: params['uid'], deleted: true });
      },
    },
  ],
};
