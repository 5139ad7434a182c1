/**
 * The service's published voice library (protocol-notes.md "The service's published voice
 * library"): every example of its documentation sends one of these ids (Emma's most of all), so a
 * drop-in server answers them. Each library voice is mapped onto a voice of the running engine's
 * own catalog of the same language and gender (the same country when there is one), and is seeded
 * with the catalog at every start, so the mapping follows the engine and is never a stale row.
 */
import type { EngineVoice } from './context.js';
import { ESPEAK_LANGUAGE_VOICES } from './espeak-voices.js';
import { SPEECH_LANGUAGES, type SpeechLanguage } from './number-words.js';
import { arrayArg, objectArg, stringArg } from '../util/args.js';

/** A catalog voice as an engine offers it (the store adds `orgId` null and `createdAt`). */
export type LibraryCatalogVoice = Omit<EngineVoice, 'orgId' | 'createdAt'>;

type Gender = 'Feminine' | 'Masculine';

/** name, id, language, country, gender — the flagship voices, all Adult. */
export const LIBRARY_VOICES: readonly (readonly [name: string, uid: string, language: SpeechLanguage, country: string, gender: Gender])[] = [
  ['Emma', 'YTpq7expH9539ERJ', 'en', 'us', 'Feminine'],
  ['Kent', 'LFZvm12tW_z0xfGo', 'en', 'us', 'Masculine'],
  ['Sydney', 'jtEKaLYNn6iif5PR', 'en', 'us', 'Feminine'],
  ['John', 'KWJiFWu2O9nMPYcR', 'en', 'us', 'Masculine'],
  ['Eva', 'ubuXFxVQwVYnZQhy', 'en', 'gb', 'Feminine'],
  ['Jack', 'm86j6D7UZpGzHsNu', 'en', 'gb', 'Masculine'],
  ['Elise', 'b35yykvVppLXyw_l', 'fr', 'fr', 'Feminine'],
  ['Leo', 'axlOaUiFyOZhy4nv', 'fr', 'fr', 'Masculine'],
  ['Mia', '-uP9MuGtBqAvEyxI', 'de', 'de', 'Feminine'],
  ['Maximilian', '0y1VZjPabOBU3rWy', 'de', 'de', 'Masculine'],
  ['Valentina', 'B36pbz5_UoWn4BDl', 'es', 'mx', 'Feminine'],
  ['Sergio', 'xu7iJ_fn2ElcWp2s', 'es', 'es', 'Masculine'],
  ['Alice', 'pYcGZz9VOo4n2ynh', 'pt', 'br', 'Feminine'],
  ['Davi', 'M-FvVo9c-jGR4PgP', 'pt', 'br', 'Masculine'],
];

/** The uid of Emma, the voice of the service's documentation examples (and of `voice: "default"`). */
export const LIBRARY_DEFAULT_VOICE_ID = 'YTpq7expH9539ERJ';

/**
 * The library voices, each speaking with the engine catalog voice (`catalog`) closest to it:
 * same language, gender and country, else same language and gender, else same language (tone
 * voices are all Neutral). Library voices that fall on the same bucket take its voices in turn.
 * For espeak, the espeak voice of the library voice's country is used when the language has one
 * (Sergio speaks Castilian `es` even though the only male Spanish catalog voice is Mexican).
 * Two library voices on one engine voice differ: the later is 8 pitch units higher and 10 wpm
 * quicker. A language the catalog lacks has no library voices.
 */
export function libraryVoices(catalog: readonly LibraryCatalogVoice[]): LibraryCatalogVoice[] {
  arrayArg(catalog, 'libraryVoices: catalog');
  for (const v of catalog) {
    objectArg(v, 'libraryVoices: catalog voice');
    stringArg(v.uid, 'libraryVoices: catalog voice uid');
    arrayArg(v.tags, 'libraryVoices: catalog voice tags');
    objectArg(v.params, 'libraryVoices: catalog voice params');
  }
  const turns = new Map<string, number>();
  const out: LibraryCatalogVoice[] = [];
  for (const [name, uid, language, country, gender] of LIBRARY_VOICES) {
    const ofLanguage = catalog.filter((v) => v.language === language);
    const ofGender = ofLanguage.filter((v) => v.tags.includes(gender));
    const ofCountry = ofGender.filter((v) => v.tags.includes(country));
    const bucket = ofCountry.length > 0 ? ofCountry : ofGender.length > 0 ? ofGender : ofLanguage;
    if (bucket.length === 0) continue;
    const key = bucket.map((v) => v.uid).join('|');
    const turn = turns.get(key) ?? 0;
    turns.set(key, turn + 1);
    const base = bucket[turn % bucket.length]!;
    const params: Record<string, unknown> = { ...base.params };
    // A second library voice on the same engine voice (Emma and Sydney on one American female
    // voice) is made distinct: a little higher and quicker per extra turn (espeak's pitch and rate).
    const lap = Math.floor(turn / bucket.length);
    if (lap > 0 && typeof params['pitch'] === 'number' && typeof params['rate'] === 'number') {
      params['pitch'] = Math.min(100, params['pitch'] + 8 * lap);
      params['rate'] = Math.min(450, params['rate'] + 10 * lap);
    }
    if (params['engine'] === 'espeak' && SPEECH_LANGUAGES.includes(language)) {
      const local = ESPEAK_LANGUAGE_VOICES[language].find(([, c]) => c === country);
      if (local) params['voice'] = local[0];
    }
    out.push({
      uid,
      name,
      description: `${name}, a voice of the service's library (${gender}, Adult, ${language}-${country}), spoken by this server's ${base.name}.`,
      language,
      filename: '',
      startS: 0,
      tags: [language, country, 'Adult', gender],
      isProClone: false,
      params,
    });
  }
  return out;
}

/** The engine's catalog followed by the library voices mapped onto it (what the server seeds). */
export function withLibraryVoices(catalog: readonly LibraryCatalogVoice[]): LibraryCatalogVoice[] {
  return [...catalog, ...libraryVoices(catalog)];
}
