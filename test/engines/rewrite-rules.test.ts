import { describe, expect, it } from 'vitest';
import { numberWords } from '../../src/engines/number-words.js';
import { rewriteText } from '../../src/engines/rewrite-rules.js';

describe('rewrite rules (docs/api.md §2.8)', () => {
  it.each([
    ['en', 'Meet me at 12:30 on 2024-03-05, bring $5 & 25% more.', 'Meet me at twelve thirty on March five, twenty twenty-four, bring five dollars and twenty-five percent more.'],
    ['fr', 'Rendez-vous à 12:30 le 2024-03-05, avec 5€ & 25% de plus.', 'Rendez-vous à douze heures trente le cinq mars deux mille vingt-quatre, avec cinq euros et vingt-cinq pour cent de plus.'],
    ['de', 'Treffen um 12:30 am 05.03.2024, mit 3,5 Euro.', 'Treffen um zwölf Uhr dreißig am fünfte März zweitausendvierundzwanzig, mit drei Komma fünf Euro.'],
    ['es', 'Nos vemos a las 12:30 el 5/3/2024 con 21 amigos.', 'Nos vemos a las doce y treinta el cinco de marzo de dos mil veinticuatro con veintiuno amigos.'],
    ['pt', 'Às 12:30 de 2024-03-05 custa R 1.250,50.', 'Às doze horas e trinta de cinco de março de dois mil e vinte e quatro custa R mil duzentos e cinquenta vírgula cinquenta.'],
  ] as const)('%s: times, dates, numbers, currency and symbols', (lang, input, expected) => {
    expect(rewriteText(input, lang)).toBe(expected);
  });

  it('numbers in each language at the irregular points', () => {
    expect([71, 80, 91, 200, 1000, 2000000].map((n) => numberWords(n, 'fr'))).toEqual(['soixante et onze', 'quatre-vingts', 'quatre-vingt-onze', 'deux cents', 'mille', 'deux millions']);
    expect([1, 21, 101, 1001].map((n) => numberWords(n, 'de'))).toEqual(['eins', 'einundzwanzig', 'einhunderteins', 'eintausendeins']);
    expect([100, 101, 21000, 1000000].map((n) => numberWords(n, 'es'))).toEqual(['cien', 'ciento uno', 'veintiún mil', 'un millón']);
    expect([100, 123, 1100, 2000000].map((n) => numberWords(n, 'pt'))).toEqual(['cem', 'cento e vinte e três', 'mil e cem', 'dois milhões']);
    expect([0, 15, 99, 1234].map((n) => numberWords(n, 'en'))).toEqual(['zero', 'fifteen', 'ninety-nine', 'one thousand two hundred thirty-four']);
  });

  it('words without a rule pass unchanged', () => {
    expect(rewriteText('plain words, no numbers', 'en')).toBe('plain words, no numbers');
  });
});
