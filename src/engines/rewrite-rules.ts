/**
 * The TTS `rewrite_rules` of service-api.md §2.8: "a language code enables all rewrite rules for
 * that language". The API does not show the rules; these are the ones this engine has, applied to
 * each whitespace-separated word before synthesis (so a word timestamp still names the word the
 * client sent):
 *
 * - times `H:MM` (0:00–23:59): "12:30" → fr "douze heures trente", en "twelve thirty";
 * - dates `YYYY-MM-DD`, and `D/M/YYYY` (`M/D/YYYY` in English): "2024-03-05" → fr "cinq mars deux mille vingt-quatre";
 * - numbers with the language's decimal and thousands separators, percentages, currency
 *   (`$`, `€`, `£` before or after);
 * - symbols standing alone: `&`, `+`, `=`, `@`, `%`, `#`, `°`.
 */
import { describeValue, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { digitWords, numberWords, SPEECH_LANGUAGES, type SpeechLanguage } from './number-words.js';

interface LanguageWords {
  /** A time of day, hours and minutes → phrase. */
  time(h: number, m: number): string;
  months: readonly string[];
  date(d: number, month: string, y: number): string;
  point: string;
  /** Decimal separator and thousands separator in written numbers. */
  decimal: ',' | '.';
  percent: string;
  currency: Record<string, [one: string, many: string]>;
  symbols: Record<string, string>;
}

const W: Record<SpeechLanguage, LanguageWords> = {
  en: {
    time: (h, m) => (m === 0 ? `${numberWords(h, 'en')} o'clock` : `${numberWords(h, 'en')} ${m < 10 ? `oh ${numberWords(m, 'en')}` : numberWords(m, 'en')}`),
    months: ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'],
    date: (d, month, y) => `${month} ${numberWords(d, 'en')}, ${enYear(y)}`,
    point: 'point',
    decimal: '.',
    percent: 'percent',
    currency: { $: ['dollar', 'dollars'], '€': ['euro', 'euros'], '£': ['pound', 'pounds'] },
    symbols: { '&': 'and', '+': 'plus', '=': 'equals', '@': 'at', '%': 'percent', '#': 'number', '°': 'degrees' },
  },
  fr: {
    time: (h, m) => `${h === 1 ? 'une' : numberWords(h, 'fr')} heure${h > 1 ? 's' : ''}${m ? ` ${numberWords(m, 'fr')}` : ''}`,
    months: ['janvier', 'février', 'mars', 'avril', 'mai', 'juin', 'juillet', 'août', 'septembre', 'octobre', 'novembre', 'décembre'],
    date: (d, month, y) => `${d === 1 ? 'premier' : numberWords(d, 'fr')} ${month} ${numberWords(y, 'fr')}`,
    point: 'virgule',
    decimal: ',',
    percent: 'pour cent',
    currency: { $: ['dollar', 'dollars'], '€': ['euro', 'euros'], '£': ['livre', 'livres'] },
    symbols: { '&': 'et', '+': 'plus', '=': 'égale', '@': 'arobase', '%': 'pour cent', '#': 'numéro', '°': 'degrés' },
  },
  de: {
    time: (h, m) => `${h === 1 ? 'ein' : numberWords(h, 'de')} Uhr${m ? ` ${numberWords(m, 'de')}` : ''}`,
    months: ['Januar', 'Februar', 'März', 'April', 'Mai', 'Juni', 'Juli', 'August', 'September', 'Oktober', 'November', 'Dezember'],
    date: (d, month, y) => `${deOrdinal(d)} ${month} ${deYear(y)}`,
    point: 'Komma',
    decimal: ',',
    percent: 'Prozent',
    currency: { $: ['Dollar', 'Dollar'], '€': ['Euro', 'Euro'], '£': ['Pfund', 'Pfund'] },
    symbols: { '&': 'und', '+': 'plus', '=': 'gleich', '@': 'at', '%': 'Prozent', '#': 'Nummer', '°': 'Grad' },
  },
  es: {
    time: (h, m) => `${h === 1 ? 'una' : numberWords(h, 'es')}${m ? ` y ${numberWords(m, 'es')}` : ' en punto'}`,
    months: ['enero', 'febrero', 'marzo', 'abril', 'mayo', 'junio', 'julio', 'agosto', 'septiembre', 'octubre', 'noviembre', 'diciembre'],
    date: (d, month, y) => `${d === 1 ? 'primero' : numberWords(d, 'es')} de ${month} de ${numberWords(y, 'es')}`,
    point: 'coma',
    decimal: ',',
    percent: 'por ciento',
    currency: { $: ['dólar', 'dólares'], '€': ['euro', 'euros'], '£': ['libra', 'libras'] },
    symbols: { '&': 'y', '+': 'más', '=': 'igual a', '@': 'arroba', '%': 'por ciento', '#': 'número', '°': 'grados' },
  },
  pt: {
    time: (h, m) => `${h === 1 ? 'uma' : h === 2 ? 'duas' : numberWords(h, 'pt')} hora${h > 1 ? 's' : ''}${m ? ` e ${numberWords(m, 'pt')}` : ''}`,
    months: ['janeiro', 'fevereiro', 'março', 'abril', 'maio', 'junho', 'julho', 'agosto', 'setembro', 'outubro', 'novembro', 'dezembro'],
    date: (d, month, y) => `${d === 1 ? 'primeiro' : numberWords(d, 'pt')} de ${month} de ${numberWords(y, 'pt')}`,
    point: 'vírgula',
    decimal: ',',
    percent: 'por cento',
    currency: { $: ['dólar', 'dólares'], '€': ['euro', 'euros'], '£': ['libra', 'libras'] },
    symbols: { '&': 'e', '+': 'mais', '=': 'igual a', '@': 'arroba', '%': 'por cento', '#': 'número', '°': 'graus' },
  },
};

function enYear(y: number): string {
  // 1984 → nineteen eighty-four; 2005 → two thousand five; 2024 → twenty twenty-four.
  if (y >= 1100 && y < 10000 && y % 1000 >= 100 && !(y >= 2000 && y < 2010)) {
    const hi = Math.floor(y / 100);
    const lo = y % 100;
    return `${numberWords(hi, 'en')} ${lo === 0 ? 'hundred' : lo < 10 ? `oh ${numberWords(lo, 'en')}` : numberWords(lo, 'en')}`;
  }
  if (y >= 2010 && y < 2100) return `twenty ${numberWords(y % 100, 'en')}`;
  return numberWords(y, 'en');
}

function deYear(y: number): string {
  // 1984 → neunzehnhundertvierundachtzig; from 2000 the plain number.
  if (y >= 1100 && y < 2000) return `${numberWords(Math.floor(y / 100), 'de')}hundert${y % 100 ? numberWords(y % 100, 'de') : ''}`;
  return numberWords(y, 'de');
}

function deOrdinal(d: number): string {
  const irregular: Record<number, string> = { 1: 'erste', 3: 'dritte', 7: 'siebte', 8: 'achte' };
  if (irregular[d]) return irregular[d]!;
  const w = numberWords(d, 'de');
  return d < 20 ? `${w}te` : `${w}ste`;
}

const LEAD = /^[("'«¿¡“‘[]+/;
const TRAIL = /[)"'».,;:!?…”’\]]+$/;

/** A number as written in `lang` ("1,234.5" in English, "1.234,5" or "1 234,5" elsewhere) → words, or undefined. */
function numberPhrase(s: string, lang: SpeechLanguage): string | undefined {
  const w = W[lang];
  const thousands = w.decimal === '.' ? ',' : '.';
  const re = w.decimal === '.' ? /^(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?$/ : /^(\d{1,3}(?:[. \u00a0\u202f]\d{3})+|\d+)(?:,(\d+))?$/;
  const m = re.exec(s);
  if (!m) return undefined;
  const intDigits = m[1]!.split(thousands).join('').replace(/[ \u00a0\u202f]/g, '');
  const n = Number(intDigits);
  let words = intDigits.length > 1 && intDigits.startsWith('0') ? digitWords(intDigits, lang) : numberWords(n, lang);
  if (m[2] !== undefined) words += ` ${w.point} ${m[2].length <= 2 && !m[2].startsWith('0') ? numberWords(Number(m[2]), lang) : digitWords(m[2], lang)}`;
  return words;
}

/** The core of one word (no surrounding punctuation) rewritten, or undefined when no rule applies. */
function rewriteCore(core: string, lang: SpeechLanguage): string | undefined {
  const w = W[lang];
  let m = /^([01]?\d|2[0-3])[:h]([0-5]\d)$/.exec(core);
  if (m) return w.time(Number(m[1]), Number(m[2]));
  m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(core);
  if (m) return dateWords(Number(m[3]), Number(m[2]), Number(m[1]), lang);
  m = /^(\d{1,2})[/.](\d{1,2})[/.](\d{4})$/.exec(core);
  if (m) {
    const [a, b] = [Number(m[1]), Number(m[2])];
    return lang === 'en' ? dateWords(b, a, Number(m[3]), lang) : dateWords(a, b, Number(m[3]), lang);
  }
  m = /^(.+?)\s?%$/.exec(core);
  if (m) {
    const n = numberPhrase(m[1]!, lang);
    if (n) return `${n} ${w.percent}`;
  }
  const cur = /^([$€£])(.+)$/.exec(core) ?? swap(/^(.+?)([$€£])$/.exec(core));
  if (cur) {
    const n = numberPhrase(cur[2]!, lang);
    if (n) {
      const [one, many] = w.currency[cur[1]!]!;
      return `${n} ${n === numberWords(1, lang) ? one : many}`;
    }
  }
  if (/^\d/.test(core)) return numberPhrase(core, lang);
  if (core.length === 1 && w.symbols[core]) return w.symbols[core];
  return undefined;
}

function swap(m: RegExpExecArray | null): [string, string, string] | null {
  return m ? [m[0], m[2]!, m[1]!] : null;
}

function dateWords(d: number, month: number, y: number, lang: SpeechLanguage): string | undefined {
  if (month < 1 || month > 12 || d < 1 || d > 31) return undefined;
  return W[lang].date(d, W[lang].months[month - 1]!, y);
}

/**
 * One whitespace-free word with the rewrite rules of `lang` applied: surrounding punctuation is
 * kept (so sentence ends still end sentences), the rest rewritten when a rule matches.
 */
export function rewriteWord(word: string, lang: SpeechLanguage): string {
  const lead = LEAD.exec(word)?.[0] ?? '';
  let rest = word.slice(lead.length);
  // A trailing "." that belongs to a number ("3.") is punctuation; a "%" or currency sign is not.
  const trail = TRAIL.exec(rest)?.[0] ?? '';
  rest = rest.slice(0, rest.length - trail.length);
  if (rest === '') return word.length === 1 && W[lang].symbols[word] ? W[lang].symbols[word]! : word;
  const spoken = rewriteCore(rest, lang);
  return spoken === undefined ? word : `${lead}${spoken}${trail}`;
}

/** A whole text with the rewrite rules of `lang` applied word by word (whitespace kept). */
export function rewriteText(text: string, lang: SpeechLanguage): string {
  stringArg(text, 'rewriteText: text');
  if (!SPEECH_LANGUAGES.includes(lang)) throw new VoicewireError('INVALID_ARGUMENT', `rewriteText: lang must be one of ${SPEECH_LANGUAGES.join(', ')}, got ${typeof lang === 'string' ? JSON.stringify(lang) : describeValue(lang)}`);
  return text.replace(/\S+/g, (w) => rewriteWord(w, lang));
}
