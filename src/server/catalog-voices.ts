/**
 * The catalog voices (the engine's own and the service's library mapped onto them) are derived
 * from the engine at every start and served from memory beside the stored voices of the
 * organizations (issue 23): a voice of an engine no longer running (`tone-en` after a start with
 * espeak-ng) is never listed nor spoken with. Catalog rows an older version stored (orgId null) are
 * ignored here and deleted by the stores' migration 3.
 */
import type { Page, Store, VoiceRecord } from './store/store.js';
import { checkListOptions, checkVoice } from './store/validate.js';
import { VoicewireError } from '../util/errors.js';

/** A copy of `v` its receiver may change (tags and params too). */
export const cloneVoice = (v: VoiceRecord): VoiceRecord => ({ ...v, tags: [...v.tags], params: structuredClone(v.params) });

/**
 * `store` with the catalog `catalog` in front: `listVoices` (catalog first, in the given order, then
 * the organization's voices), `getVoice` and `putVoice` answer for it; every other method is the
 * store's. A catalog voice cannot be written (`putVoice` with orgId null, or an organization's
 * voice with a catalog uid: `INVALID_ARGUMENT`).
 */
export function withCatalogVoices(store: Store, catalog: readonly VoiceRecord[]): Store {
  const voices = catalog.map(cloneVoice);
  const byUid = new Map(voices.map((v) => [v.uid, v]));
  const overrides: Pick<Store, 'listVoices' | 'getVoice' | 'putVoice'> = {
    async listVoices(orgId, options): Promise<Page<VoiceRecord>> {
      checkListOptions(options, 'voices');
      if (!options.includeCatalog) return store.listVoices(orgId, options);
      const { limit, offset } = options;
      const fromCatalog = voices.slice(offset, limit === null ? undefined : offset + limit).map(cloneVoice);
      const room = limit === null ? null : limit - fromCatalog.length;
      // Always asked, for the total; a room of 0 asks for one and keeps none.
      const own = await store.listVoices(orgId, { includeCatalog: false, limit: room === null ? null : Math.max(1, room), offset: Math.max(0, offset - voices.length) });
      const items = room === null ? own.items : own.items.slice(0, room);
      return { items: [...fromCatalog, ...items], total: voices.length + own.total };
    },
    async getVoice(orgId, uid) {
      const v = typeof uid === 'string' ? byUid.get(uid) : undefined;
      if (v !== undefined) return cloneVoice(v);
      const stored = await store.getVoice(orgId, uid);
      // A catalog row an older version stored: stale, not a voice of this engine.
      return stored?.orgId === null ? undefined : stored;
    },
    async putVoice(voice) {
      checkVoice(voice);
      if (voice.orgId === null) throw new VoicewireError('INVALID_ARGUMENT', 'catalog voices are derived from the engines at start, not stored');
      if (byUid.has(voice.uid)) throw new VoicewireError('INVALID_ARGUMENT', `voice ${JSON.stringify(voice.uid)} is a catalog voice`);
      return store.putVoice(voice);
    },
  };
  return new Proxy(store, {
    get(target, prop) {
      if (Object.prototype.hasOwnProperty.call(overrides, prop)) return overrides[prop as keyof typeof overrides];
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
