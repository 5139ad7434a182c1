/**
 * OpenAI's voice names on voicewire's voices. OpenAI names 11 voices (alloy, ash, ballad, coral,
 * echo, fable, nova, onyx, sage, shimmer, verse); each maps onto the English catalog voice of the
 * running engine closest in gender and accent (espeak: Ava, Noah, Oliver, Isla; tone: its one
 * English voice). Any other value is a voicewire voice: a uid, or a name (case-insensitive) of a
 * catalog voice or one of the organization's.
 *
 * | OpenAI  | espeak (uid)        | why                        |
 * |---------|---------------------|----------------------------|
 * | alloy   | espeak-en-ava       | neutral, even              |
 * | ash     | espeak-en-noah      | male, American             |
 * | ballad  | espeak-en-oliver    | male, low and calm         |
 * | coral   | espeak-en-isla      | female, lively             |
 * | echo    | espeak-en-noah      | male, American             |
 * | fable   | espeak-en-oliver    | male, British              |
 * | nova    | espeak-en-ava       | female, American           |
 * | onyx    | espeak-en-oliver    | male, deep                 |
 * | sage    | espeak-en-ava       | female, calm               |
 * | shimmer | espeak-en-isla      | female, bright             |
 * | verse   | espeak-en-noah      | male, expressive           |
 */
import type { Store } from '../../store/store.js';
import { invalidParam } from './errors.js';

/** The voices OpenAI's speech API names, each with the voicewire catalog uids it maps onto, first found wins. */
export const OPENAI_VOICES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  alloy: ['espeak-en-ava', 'tone-en'],
  ash: ['espeak-en-noah', 'tone-en'],
  ballad: ['espeak-en-oliver', 'tone-en'],
  coral: ['espeak-en-isla', 'tone-en'],
  echo: ['espeak-en-noah', 'tone-en'],
  fable: ['espeak-en-oliver', 'tone-en'],
  nova: ['espeak-en-ava', 'tone-en'],
  onyx: ['espeak-en-oliver', 'tone-en'],
  sage: ['espeak-en-ava', 'tone-en'],
  shimmer: ['espeak-en-isla', 'tone-en'],
  verse: ['espeak-en-noah', 'tone-en'],
});

/** Most voices read when a voice is looked up by name (the organization's own plus the catalog). */
const NAME_SCAN_LIMIT = 10_000;

/**
 * The voicewire voice uid an OpenAI `voice` names, or null for the engine's default voice (an
 * OpenAI name whose mapped voices the running engine does not have).
 * @throws VoicewireError `INVALID_ARGUMENT` (400, param `voice`) when it names no voice.
 */
export async function resolveOpenAIVoice(store: Store, orgId: string, voice: string): Promise<string | null> {
  const mapped = Object.prototype.hasOwnProperty.call(OPENAI_VOICES, voice) ? OPENAI_VOICES[voice]! : undefined;
  if (mapped !== undefined) {
    for (const uid of mapped) if ((await store.getVoice(orgId, uid)) !== undefined) return uid;
    return null;
  }
  if (voice !== '' && (await store.getVoice(orgId, voice)) !== undefined) return voice;
  const wanted = voice.toLowerCase();
  const page = await store.listVoices(orgId, { includeCatalog: true, limit: NAME_SCAN_LIMIT, offset: 0 });
  const byName = page.items.find((v) => v.name.toLowerCase() === wanted);
  if (byName !== undefined) return byName.uid;
  throw invalidParam('voice', `voice ${JSON.stringify(voice)} is not supported: use one of OpenAI's (${Object.keys(OPENAI_VOICES).join(', ')}) or a voicewire voice uid or name (GET /api/voices)`);
}
