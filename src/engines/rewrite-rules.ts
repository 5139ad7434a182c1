/**
 * Text rewriting before synthesis, two sets:
 *
 * - The service's named rules of `json_config.rewrite_rules` (§2.8, protocol-notes.md "Rewrite
 *   rules"): `"TimeEn,Date"`, `"en,fr"`; {@link applyRewriteRules} at the end of this file, with
 *   the documented effects. This is what the TTS engines apply.
 * - {@link rewriteText}: voicewire's own reading of a whole language into words, a utility:
 *
 * Both work on each whitespace-separated word (so a word timestamp still names the word the
 * client sent):
 *
 * - times `H:MM` (0:00–23:59): "12:30" → fr "douze heures trente", en "twelve thirty";
 * - dates `YYYY-MM-DD`, and `D/M/YYYY` (`M/D/YYYY` in English): "2024-03-05" → fr "cinq mars deux mille vingt-quatre";
 * - numbers with the language's decimal and thousands separators, percentages, currency
 *   (`$`, `€`, `£` before or after);
 * - symbols standing alone: `&`, `+`, `=`, `@`, `%`, `#`, `°`.
 */
import { arrayArg, describeValue, stringArg } from '../util/args.js';
import { REWRITE_RULE_NAMES, type RewriteRuleName } from '../protocol/config.js';
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

// ---------------------------------------------------------------------------------------------
// The service's named rules (protocol-notes.md "Rewrite rules"): `rewrite_rules: "TimeEn,Date"`
// ---------------------------------------------------------------------------------------------

/** What each language calls the symbols of addresses, links and phone numbers, and its number words. */
interface RuleWords {
  symbols: Record<string, string>;
  minus: string;
  /** Scale words: thousand, [one million, many millions], [one billion, many billions]. */
  thousand: (n: number) => string;
  million: (n: number) => string;
  billion: (n: number) => string;
}

const RULE_WORDS: Record<SpeechLanguage, RuleWords> = {
  en: {
    symbols: { '@': 'at', '.': 'dot', '-': 'dash', _: 'underscore', '+': 'plus', ':': 'colon', '/': 'slash', '?': 'question mark', '=': 'equals', '&': 'and', '#': 'hash', '%': 'percent', '~': 'tilde' },
    minus: 'minus',
    thousand: (n) => `${n} thousand`,
    million: (n) => `${n} million`,
    billion: (n) => `${n} billion`,
  },
  fr: {
    symbols: { '@': 'arobase', '.': 'point', '-': 'tiret', _: 'tiret bas', '+': 'plus', ':': 'deux-points', '/': 'barre oblique', '?': "point d'interrogation", '=': 'égal', '&': 'et', '#': 'dièse', '%': 'pour cent', '~': 'tilde' },
    minus: 'moins',
    thousand: (n) => (n === 1 ? 'mille' : `${n} mille`),
    million: (n) => `${n} million${n > 1 ? 's' : ''}`,
    billion: (n) => `${n} milliard${n > 1 ? 's' : ''}`,
  },
  de: {
    symbols: { '@': 'at', '.': 'Punkt', '-': 'Bindestrich', _: 'Unterstrich', '+': 'plus', ':': 'Doppelpunkt', '/': 'Schrägstrich', '?': 'Fragezeichen', '=': 'gleich', '&': 'und', '#': 'Raute', '%': 'Prozent', '~': 'Tilde' },
    minus: 'minus',
    thousand: (n) => (n === 1 ? 'tausend' : `${n} tausend`),
    million: (n) => (n === 1 ? '1 Million' : `${n} Millionen`),
    billion: (n) => (n === 1 ? '1 Milliarde' : `${n} Milliarden`),
  },
  es: {
    symbols: { '@': 'arroba', '.': 'punto', '-': 'guion', _: 'guion bajo', '+': 'más', ':': 'dos puntos', '/': 'barra', '?': 'signo de interrogación', '=': 'igual', '&': 'y', '#': 'almohadilla', '%': 'por ciento', '~': 'tilde' },
    minus: 'menos',
    thousand: (n) => (n === 1 ? 'mil' : `${n} mil`),
    million: (n) => (n === 1 ? '1 millón' : `${n} millones`),
    // Spanish counts "mil millones", not billions.
    billion: (n) => (n === 1 ? 'mil millones' : `${n} mil millones`),
  },
  pt: {
    symbols: { '@': 'arroba', '.': 'ponto', '-': 'hífen', _: 'sublinhado', '+': 'mais', ':': 'dois-pontos', '/': 'barra', '?': 'ponto de interrogação', '=': 'igual', '&': 'e', '#': 'cerquilha', '%': 'por cento', '~': 'til' },
    minus: 'menos',
    thousand: (n) => (n === 1 ? 'mil' : `${n} mil`),
    million: (n) => (n === 1 ? '1 milhão' : `${n} milhões`),
    billion: (n) => (n === 1 ? '1 bilhão' : `${n} bilhões`),
  },
};

const RULE_LANG: Record<string, SpeechLanguage> = { En: 'en', Fr: 'fr', De: 'de', Es: 'es', Pt: 'pt' };

/** Characters spelled one by one, symbols by their word (`john.doe` → `john dot doe`: runs of letters and digits stay). */
function spell(s: string, lang: SpeechLanguage): string {
  const words = RULE_WORDS[lang].symbols;
  return s
    .split(/([^\p{L}\p{N}])/u)
    .filter((p) => p !== '')
    .map((p) => words[p] ?? p)
    .join(' ');
}

/** Number: years 1900–2100 and numbers below 1000 are kept; the rest is read in groups with scale words. */
function numberRule(core: string, lang: SpeechLanguage): string | undefined {
  const grouping = lang === 'en' ? /^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/ : /^-?\d{1,3}(?:\.\d{3})+(?:,\d+)?$/;
  const plain = lang === 'en' ? /^-?\d+(?:\.\d+)?$/ : /^-?\d+(?:,\d+)?$/;
  if (!grouping.test(core) && !plain.test(core)) return undefined;
  const negative = core.startsWith('-');
  const body = negative ? core.slice(1) : core;
  const point = lang === 'en' ? '.' : ',';
  const at = body.indexOf(point);
  const intPart = (at < 0 ? body : body.slice(0, at)).replace(/[,.]/g, '');
  const fraction = at < 0 ? '' : body.slice(at);
  const n = Number(intPart);
  if (!Number.isSafeInteger(n)) return undefined;
  if (n < 1000 || (!negative && fraction === '' && n >= 1900 && n <= 2100 && intPart.length === 4)) return core;
  const w = RULE_WORDS[lang];
  const groups: string[] = [];
  const billions = Math.floor(n / 1e9);
  const millions = Math.floor((n % 1e9) / 1e6);
  const thousands = Math.floor((n % 1e6) / 1e3);
  const rest = n % 1000;
  if (billions > 0) groups.push(w.billion(billions));
  if (millions > 0) groups.push(w.million(millions));
  if (thousands > 0) groups.push(w.thousand(thousands));
  if (rest > 0 || fraction !== '') groups.push(`${rest}${fraction}`);
  return `${negative ? `${w.minus} ` : ''}${groups.join(' ')}`;
}

const EMAIL = /^[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+$/u;
const URL_LIKE = /^(?:https?:\/\/|www\.)[^\s]+$|^[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.(?:com|org|net|io|dev|fr|de|es|pt|br|uk|eu|info|ai|co)(?:\/[^\s]*)?$/iu;
const PHONE = /^\+?[\d().-]+$/;
const ALNUM_UNIT = /^\d+(?:st|nd|rd|th|am|pm|er|e|ère|eme|ème|º|ª|o|a|h|s|m|km|kg|g|cm|mm|ml|l|x|k)$/iu;

/** The core of one token rewritten by the first enabled rule that matches, or undefined. */
function applyRules(core: string, trail: string, rules: readonly RewriteRuleName[]): { core: string; trail: string } | undefined {
  const has = (kind: string): SpeechLanguage | undefined => {
    const r = rules.find((x) => x.startsWith(kind));
    return r === undefined ? undefined : RULE_LANG[r.slice(kind.length)];
  };
  let lang = has('Email');
  if (lang && EMAIL.test(core)) return { core: spell(core, lang), trail };
  lang = has('Url');
  if (lang && URL_LIKE.test(core)) return { core: spell(core, lang), trail };
  lang = has('Phone');
  if (lang && PHONE.test(core)) {
    const digits = core.replace(/\D/g, '');
    // A phone number: a leading +, or digit groups with separators; at least 7 digits.
    if (digits.length >= 7 && (core.startsWith('+') || /\d[().-]+\d/.test(core))) {
      const groups = core.replace(/^\+/, '').split(/[().-]+/).filter((g) => g !== '');
      const spoken = groups.map((g) => g.split('').join(' ')).join(', ');
      return { core: `${core.startsWith('+') ? `${RULE_WORDS[lang].symbols['+']} ` : ''}${spoken}`, trail };
    }
  }
  if (rules.includes('Date')) {
    const m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(core);
    if (m) return { core: `${m[1]}-${m[2]} ${m[3]}`, trail };
  }
  // Times: H:MM, with AM/PM after it in English (`3:45PM`).
  const time = /^([01]?\d|2[0-3]):([0-5]\d)((?:[AaPp]\.?[Mm]\.?)?)$/.exec(core);
  if (time) {
    const [, h, mm, ampm] = time;
    // AM/PM is English; otherwise the time rule named first.
    const rule = ampm !== '' ? rules.find((r) => r === 'TimeEn') : rules.find((r) => r.startsWith('Time'));
    if (rule === 'TimeEn') return { core: `${h}.${mm}${ampm}`, trail };
    if (rule === 'TimeFr') return { core: `${h}h${mm}`, trail };
    if (rule === 'TimeDe') return { core: mm === '00' ? `${h} Uhr` : `${h} Uhr ${mm}`, trail };
  }
  if (rules.includes('AlNum') && core.length >= 2 && /^[\p{L}\p{N}]+$/u.test(core) && /\p{N}/u.test(core) && /\p{L}/u.test(core) && !ALNUM_UNIT.test(core)) {
    return { core: [...core].join(' '), trail };
  }
  lang = has('Number');
  if (lang) {
    // A trailing "." of a sentence end was cut off into `trail` by the caller already.
    const n = numberRule(core, lang);
    if (n !== undefined && n !== core) return { core: n, trail };
  }
  return undefined;
}

/**
 * One whitespace-free token with the named rules applied (protocol-notes.md "Rewrite rules"):
 *
 * - `Date`: `12/31/2020` → `12-31 2020`.
 * - `TimeEn`: `12:30` → `12.30`, `3:45PM!` → `3.45PM!`; `TimeFr`: `14:00?` → `14h00?`; `TimeDe`:
 *   `14:30` → `14 Uhr 30`, `14:00` → `14 Uhr`.
 * - `Number…`: years (1900–2100) and numbers below 1000 are kept; the rest is read in groups with
 *   the language's scale words: `1234` → `1 thousand 234`, `-4500` → `minus 4 thousand 500`; fr
 *   `1234` → `mille 234`, `2000000` → `2 millions`. English groups with `,`, the others with `.`.
 * - `Email…`, `Url…`: addresses and links spelled with the language's words for the symbols
 *   (`john.doe@example.com` → `john dot doe at example dot com`).
 * - `Phone…`: a number with a leading `+` or separated digit groups, at least 7 digits, read
 *   digit by digit, groups apart (`+1-555-123-4567` → `plus 1, 5 5 5, 1 2 3, 4 5 6 7`).
 * - `AlNum`: a code of letters and digits spelled (`AB12` → `A B 1 2`; `10am`, `3rd` are not codes).
 *
 * The first rule that matches wins, in this order: email, link, phone, date, time, code, number;
 * among rules of one kind (`NumberEn`, `NumberFr`) the one named first. Punctuation around the
 * token is kept.
 */
export function rewriteWordWithRules(word: string, rules: readonly RewriteRuleName[]): string {
  stringArg(word, 'rewriteWordWithRules: word');
  checkRules(rules, 'rewriteWordWithRules');
  const lead = LEAD.exec(word)?.[0] ?? '';
  let rest = word.slice(lead.length);
  const trail = TRAIL.exec(rest)?.[0] ?? '';
  rest = rest.slice(0, rest.length - trail.length);
  if (rest === '') return word;
  const out = applyRules(rest, trail, rules);
  return out === undefined ? word : `${lead}${out.core}${out.trail}`;
}

function checkRules(rules: readonly RewriteRuleName[], what: string): void {
  arrayArg(rules, `${what}: rules`);
  for (const r of rules) if (!(REWRITE_RULE_NAMES as readonly string[]).includes(r)) throw new VoicewireError('INVALID_ARGUMENT', `${what}: unknown rule ${describeValue(r)}; known: ${REWRITE_RULE_NAMES.join(', ')}`);
}

/** A whole text with the named rules applied token by token (whitespace kept). */
export function applyRewriteRules(text: string, rules: readonly RewriteRuleName[]): string {
  stringArg(text, 'applyRewriteRules: text');
  checkRules(rules, 'applyRewriteRules');
  return text.replace(/\S+/g, (w) => rewriteWordWithRules(w, rules));
}
