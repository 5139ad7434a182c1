/**
 * Cardinal numbers as words in the five API languages (docs/api.md §2.1), 0 to 999 999 999 999.
 * Used by the rewrite rules (§2.8 `rewrite_rules`). Beyond that range a number is read digit by
 * digit, which is what a listener can still follow.
 */
export type SpeechLanguage = 'en' | 'fr' | 'de' | 'es' | 'pt';

/** The five languages the engines speak. */
export const SPEECH_LANGUAGES: readonly SpeechLanguage[] = ['en', 'fr', 'de', 'es', 'pt'];

const MAX = 999_999_999_999;

/** `n` (a non-negative integer) as words in `lang`. */
export function numberWords(n: number, lang: SpeechLanguage): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`numberWords: ${n} is not a non-negative integer`);
  if (n > MAX) return String(n).split('').map((d) => numberWords(Number(d), lang)).join(' ');
  return SPELLERS[lang](n);
}

/** Digits read one by one (phone numbers, long numbers, decimals after the point). */
export function digitWords(digits: string, lang: SpeechLanguage): string {
  return digits.split('').map((d) => numberWords(Number(d), lang)).join(' ');
}

const SPELLERS: Record<SpeechLanguage, (n: number) => string> = { en, fr, de, es, pt };

// --- English --------------------------------------------------------------------------------

const EN_SMALL = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const EN_TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

function en(n: number): string {
  return scaled(n, ['', 'thousand', 'million', 'billion'], enBelow1000, (words, scale) => (scale ? `${words} ${scale}` : words), ' ');
}

function enBelow1000(n: number): string {
  const parts: string[] = [];
  if (n >= 100) parts.push(`${EN_SMALL[Math.floor(n / 100)]} hundred`);
  const r = n % 100;
  if (r > 0 || n === 0) parts.push(r < 20 ? EN_SMALL[r]! : EN_TENS[Math.floor(r / 10)]! + (r % 10 ? `-${EN_SMALL[r % 10]}` : ''));
  return parts.join(' ');
}

// --- French ---------------------------------------------------------------------------------

const FR_SMALL = ['zéro', 'un', 'deux', 'trois', 'quatre', 'cinq', 'six', 'sept', 'huit', 'neuf', 'dix', 'onze', 'douze', 'treize', 'quatorze', 'quinze', 'seize'];
const FR_TENS = ['', 'dix', 'vingt', 'trente', 'quarante', 'cinquante', 'soixante'];

function frBelow100(n: number): string {
  if (n <= 16) return FR_SMALL[n]!;
  if (n < 20) return `dix-${FR_SMALL[n - 10]}`;
  if (n < 70) {
    const t = Math.floor(n / 10);
    const u = n % 10;
    return u === 0 ? FR_TENS[t]! : u === 1 ? `${FR_TENS[t]} et un` : `${FR_TENS[t]}-${FR_SMALL[u]}`;
  }
  if (n < 80) return n === 71 ? 'soixante et onze' : `soixante-${frBelow100(n - 60)}`;
  if (n === 80) return 'quatre-vingts';
  return `quatre-vingt-${frBelow100(n - 80)}`;
}

function frBelow1000(n: number, final: boolean): string {
  const h = Math.floor(n / 100);
  const r = n % 100;
  let head = '';
  if (h === 1) head = 'cent';
  else if (h > 1) head = `${FR_SMALL[h]} cent${r === 0 && final ? 's' : ''}`;
  if (r === 0) return head || 'zéro';
  const tail = frBelow100(r);
  // "quatre-vingts" keeps its s only at the end of the number.
  const t = !final && r === 80 ? 'quatre-vingt' : tail;
  return head ? `${head} ${t}` : t;
}

function fr(n: number): string {
  if (n === 0) return 'zéro';
  const groups = splitThousands(n);
  const out: string[] = [];
  groups.forEach((g, i) => {
    const scale = groups.length - 1 - i;
    if (g === 0) return;
    const final = scale === 0;
    if (scale === 1) out.push(g === 1 ? 'mille' : `${frBelow1000(g, false)} mille`);
    else if (scale >= 2) {
      const name = scale === 2 ? 'million' : 'milliard';
      out.push(`${frBelow1000(g, false)} ${name}${g > 1 ? 's' : ''}`);
    } else out.push(frBelow1000(g, final));
  });
  return out.join(' ');
}

// --- German ---------------------------------------------------------------------------------

const DE_SMALL = ['null', 'eins', 'zwei', 'drei', 'vier', 'fünf', 'sechs', 'sieben', 'acht', 'neun', 'zehn', 'elf', 'zwölf', 'dreizehn', 'vierzehn', 'fünfzehn', 'sechzehn', 'siebzehn', 'achtzehn', 'neunzehn'];
const DE_TENS = ['', '', 'zwanzig', 'dreißig', 'vierzig', 'fünfzig', 'sechzig', 'siebzig', 'achtzig', 'neunzig'];

function deBelow100(n: number, inCompound: boolean): string {
  if (n === 1) return inCompound ? 'ein' : 'eins';
  if (n < 20) return DE_SMALL[n]!;
  const u = n % 10;
  const t = DE_TENS[Math.floor(n / 10)]!;
  return u === 0 ? t : `${u === 1 ? 'ein' : DE_SMALL[u]}und${t}`;
}

function deBelow1000(n: number, inCompound: boolean): string {
  const h = Math.floor(n / 100);
  const r = n % 100;
  const head = h > 0 ? `${h === 1 ? 'ein' : DE_SMALL[h]}hundert` : '';
  if (r === 0) return head || 'null';
  return head + deBelow100(r, inCompound);
}

function de(n: number): string {
  if (n === 0) return 'null';
  const groups = splitThousands(n);
  const out: string[] = [];
  groups.forEach((g, i) => {
    const scale = groups.length - 1 - i;
    if (g === 0) return;
    if (scale === 0) out.push(deBelow1000(g, false));
    else if (scale === 1) out.push(`${deBelow1000(g, true)}tausend`);
    else {
      const [one, many] = scale === 2 ? ['eine Million', 'Millionen'] : ['eine Milliarde', 'Milliarden'];
      out.push(g === 1 ? one : `${deBelow1000(g, false)} ${many}`);
    }
  });
  // Thousands and below are written as one word (dreitausendzweihundert).
  return out.join(' ').replace(/tausend /g, 'tausend');
}

// --- Spanish --------------------------------------------------------------------------------

const ES_SMALL = ['cero', 'uno', 'dos', 'tres', 'cuatro', 'cinco', 'seis', 'siete', 'ocho', 'nueve', 'diez', 'once', 'doce', 'trece', 'catorce', 'quince', 'dieciséis', 'diecisiete', 'dieciocho', 'diecinueve', 'veinte', 'veintiuno', 'veintidós', 'veintitrés', 'veinticuatro', 'veinticinco', 'veintiséis', 'veintisiete', 'veintiocho', 'veintinueve'];
const ES_TENS = ['', '', 'veinte', 'treinta', 'cuarenta', 'cincuenta', 'sesenta', 'setenta', 'ochenta', 'noventa'];
const ES_HUNDREDS = ['', 'ciento', 'doscientos', 'trescientos', 'cuatrocientos', 'quinientos', 'seiscientos', 'setecientos', 'ochocientos', 'novecientos'];

function esBelow1000(n: number, apocope: boolean): string {
  if (n === 100) return 'cien';
  const h = Math.floor(n / 100);
  const r = n % 100;
  let tail = '';
  if (r > 0) {
    tail = r < 30 ? ES_SMALL[r]! : ES_TENS[Math.floor(r / 10)]! + (r % 10 ? ` y ${ES_SMALL[r % 10]}` : '');
    // "uno" shortens before a noun: veintiún mil, un millón.
    if (apocope) tail = tail.replace(/veintiuno$/, 'veintiún').replace(/uno$/, 'un');
  }
  return [ES_HUNDREDS[h], tail].filter(Boolean).join(' ') || 'cero';
}

function es(n: number): string {
  if (n === 0) return 'cero';
  const groups = splitThousands(n);
  const out: string[] = [];
  let millions = 0;
  groups.forEach((g, i) => {
    const scale = groups.length - 1 - i;
    if (scale >= 2) {
      millions = millions * 1000 + g; // Spanish counts "mil millones", not billions.
      if (scale === 2 && millions > 0) out.push(millions === 1 ? 'un millón' : `${es(millions).replace(/uno$/, 'un')} millones`);
      return;
    }
    if (g === 0) return;
    if (scale === 1) out.push(g === 1 ? 'mil' : `${esBelow1000(g, true)} mil`);
    else out.push(esBelow1000(g, false));
  });
  return out.join(' ');
}

// --- Portuguese (Brazilian spelling) ----------------------------------------------------------

const PT_SMALL = ['zero', 'um', 'dois', 'três', 'quatro', 'cinco', 'seis', 'sete', 'oito', 'nove', 'dez', 'onze', 'doze', 'treze', 'catorze', 'quinze', 'dezesseis', 'dezessete', 'dezoito', 'dezenove'];
const PT_TENS = ['', '', 'vinte', 'trinta', 'quarenta', 'cinquenta', 'sessenta', 'setenta', 'oitenta', 'noventa'];
const PT_HUNDREDS = ['', 'cento', 'duzentos', 'trezentos', 'quatrocentos', 'quinhentos', 'seiscentos', 'setecentos', 'oitocentos', 'novecentos'];

function ptBelow1000(n: number): string {
  if (n === 100) return 'cem';
  const h = Math.floor(n / 100);
  const r = n % 100;
  const parts: string[] = [];
  if (h) parts.push(PT_HUNDREDS[h]!);
  if (r) parts.push(r < 20 ? PT_SMALL[r]! : PT_TENS[Math.floor(r / 10)]! + (r % 10 ? ` e ${PT_SMALL[r % 10]}` : ''));
  return parts.join(' e ') || 'zero';
}

function pt(n: number): string {
  if (n === 0) return 'zero';
  const groups = splitThousands(n);
  const out: string[] = [];
  groups.forEach((g, i) => {
    const scale = groups.length - 1 - i;
    if (g === 0) return;
    if (scale === 0) out.push(ptBelow1000(g));
    else if (scale === 1) out.push(g === 1 ? 'mil' : `${ptBelow1000(g)} mil`);
    else {
      const [one, many] = scale === 2 ? ['um milhão', 'milhões'] : ['um bilhão', 'bilhões'];
      out.push(g === 1 ? one : `${ptBelow1000(g)} ${many}`);
    }
  });
  // "e" joins the last group when it is below 100 or a round hundred (mil e cem, mil e vinte).
  if (out.length > 1) {
    const last = groups[groups.length - 1]!;
    if (last > 0 && (last < 100 || last % 100 === 0)) return `${out.slice(0, -1).join(' ')} e ${out[out.length - 1]}`;
  }
  return out.join(' ');
}

// --- shared ---------------------------------------------------------------------------------

/** Groups of three digits, most significant first (1234567 → [1, 234, 567]). */
function splitThousands(n: number): number[] {
  const groups: number[] = [];
  do {
    groups.unshift(n % 1000);
    n = Math.floor(n / 1000);
  } while (n > 0);
  return groups;
}

/** English-style scale joining: each non-zero group with its scale word. */
function scaled(n: number, scales: readonly string[], below1000: (g: number) => string, join: (words: string, scale: string) => string, sep: string): string {
  if (n === 0) return below1000(0);
  const groups = splitThousands(n);
  const out: string[] = [];
  groups.forEach((g, i) => {
    if (g === 0) return;
    out.push(join(below1000(g), scales[groups.length - 1 - i]!));
  });
  return out.join(sep);
}
