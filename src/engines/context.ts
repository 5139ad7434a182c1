/**
 * What an engine may ask of the server for one request or connection. The server binds it to the
 * caller's organization, so engines never see the store or the organization: they ask for what the
 * setup names (a voice, a pronunciation dictionary). Engines sit below the server and never import
 * it: the store's `VoiceRecord` and `DictionaryRecord` satisfy these shapes.
 */

/** A voice as an engine sees it. */
export interface EngineVoice {
  uid: string;
  /** null for catalog voices. */
  orgId: string | null;
  name: string;
  description: string;
  language: string;
  filename: string;
  startS: number;
  tags: string[];
  isProClone: boolean;
  /** Engine parameters (espeak voice, pitch, rate, …) as plain JSON. */
  params: Record<string, unknown>;
  createdAt: string;
}

/** A pronunciation dictionary as an engine sees it. */
export interface EngineDictionary {
  uid: string;
  language: string;
  /** A word and what to say instead: a respelling, or engine phonemes. */
  rules: readonly { word: string; replacement: string; kind: 'respelling' | 'phonemes' }[];
}

/**
 * Both lookups resolve within the caller's organization (catalog voices included) and give
 * `undefined` for an unknown id. `V` narrows the voice to what an engine reads.
 */
export interface EngineContext<V = EngineVoice> {
  /** The voice `voice_id` names (null: none given; the engine picks its default). */
  resolveVoice(voiceId: string | null): Promise<V | undefined>;
  /** The pronunciation dictionary `pronunciation_id` names (docs/api.md §2.4). */
  resolvePronunciation(id: string): Promise<EngineDictionary | undefined>;
}
