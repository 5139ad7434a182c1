/**
 * Voice design (§4.7–§4.9): candidates from a description, kept as a voice or deleted. The tone
 * engine has no timbre, so a candidate is its prompt, language and a seed (distinct per sample);
 * candidates expire after `candidateSeconds` (default 3600) and are gone once expired.
 * DELETE answers 200 `{"embedding_id", "deleted": true}` (§4.9 does not show it), 404 JSON when
 * there is no such (live) candidate; from-embedding of a missing or expired candidate is 404 too.
 * Every route here writes: an organization's API key only, never a temporary token (auth.ts).
 */
import { randomUUID, randomInt } from 'node:crypto';
import { VoicewireError } from '../../util/errors.js';
import { validateVoiceFromEmbeddingBody, validateVoiceGenerationBody } from '../../protocol/rest.js';
import { readJson, sendJson } from '../http.js';
import { assertActualText, assertStorable } from '../storable.js';
import type { RouteModule } from '../context.js';
import type { CandidateRecord, VoiceRecord } from '../store/store.js';

export const voiceDesignRoutes: RouteModule = {
  http: [
    {
      method: 'POST',
      path: '/voice-generator/generate',
      handle: async ({ ctx }, req, res) => {
        const { org } = await ctx.auth(req); // a key only: a token speaks and listens, it does not create (auth.ts)
        const body = validateVoiceGenerationBody(await readJson(req, ctx.config.limits.maxJsonBytes, ctx.config.limits.maxJsonDepth));
        assertActualText(body.prompt, 'prompt');
        assertStorable({ prompt: body.prompt, json_config: body.json_config });
        const expiresAt = new Date(Date.now() + ctx.config.candidateSeconds * 1000).toISOString();
        const seed = typeof body.json_config?.seed === 'number' ? body.json_config.seed : randomInt(2 ** 31);
        const candidates: CandidateRecord[] = Array.from({ length: body.n_samples }, (_, i) => ({
          embeddingId: randomUUID(),
          orgId: org.id,
          language: body.language,
          prompt: body.prompt,
          params: { seed: seed + i, ...(body.json_config ?? {}) },
          expiresAt,
        }));
        await ctx.store.putCandidates(candidates);
        sendJson(res, 200, { embeddings: candidates.map((c) => ({ embedding_id: c.embeddingId, ready: true, expires_at: c.expiresAt })) });
      },
    },
    {
      method: 'POST',
      path: '/voices/from-embedding',
      handle: async ({ ctx, log }, req, res) => {
        const { org } = await ctx.auth(req); // a key only: a token speaks and listens, it does not create (auth.ts)
        const body = validateVoiceFromEmbeddingBody(await readJson(req, ctx.config.limits.maxJsonBytes, ctx.config.limits.maxJsonDepth));
        assertStorable({ ...body });
        const c = await ctx.store.getCandidate(org.id, body.voice_embedding_id, new Date());
        if (c === undefined) throw new VoicewireError('NOT_FOUND', 'voice candidate not found or expired');
        const voice: VoiceRecord = {
          uid: randomUUID(),
          orgId: org.id,
          name: body.name,
          description: body.description,
          language: c.language,
          filename: '',
          startS: 0,
          tags: [c.language],
          isProClone: false,
          params: { ...c.params, prompt: c.prompt, engine: ctx.config.tts },
          createdAt: new Date().toISOString(),
        };
        await ctx.store.putVoice(voice);
        await ctx.store.deleteCandidate(org.id, c.embeddingId);
        log.info({ voice: voice.uid }, 'voice kept from a candidate');
        sendJson(res, 200, { uid: voice.uid, name: voice.name, description: voice.description, language: voice.language });
      },
    },
    {
      method: 'DELETE',
      path: '/voice-generator/embeddings/:id',
      handle: async ({ ctx, params }, req, res) => {
        const { org } = await ctx.auth(req); // a key only: a token speaks and listens, it does not create (auth.ts)
        const id = params['id']!;
        const live = await ctx.store.getCandidate(org.id, id, new Date());
        if (live === undefined || !(await ctx.store.deleteCandidate(org.id, id))) throw new VoicewireError('NOT_FOUND', 'voice candidate not found or expired');
        sendJson(res, 200, { embedding_id: id, deleted: true });
      },
    },
  ],
};
