/**
 * The service's named rewrite rules (protocol-notes.md "Rewrite rules"): every rule name and
 * alias, mixed lists, the documented examples, in the five languages; and the validator that
 * refused `"TimeEn,Date"` (issue 21).
 */
import { describe, expect, it } from 'vitest';
import { applyRewriteRules } from '../../src/engines/rewrite-rules.js';
import { REWRITE_RULE_ALIASES, REWRITE_RULE_NAMES, parseRewriteRules, validateTtsJsonConfig, type RewriteRuleName } from '../../src/protocol/config.js';
import { VoicewireError } from '../../src/util/errors.js';

const rw = (text: string, spec: string): string => applyRewriteRules(text, parseRewriteRules(spec).rules);

describe('rewrite_rules: names and aliases', () => {
  it('the documented form, a comma list of names, validates; so do mixed lists and every alias', () => {
    for (const spec of ['TimeEn,Date', 'en,fr', 'en', 'fr', 'de', 'es', 'pt', 'NumberDe, PhoneDe', 'Date,en,AlNum', ...REWRITE_RULE_NAMES]) {
      expect(validateTtsJsonConfig({ rewrite_rules: spec }).rewrite_rules, spec).toBe(spec);
    }
  });

  it('unknown names (and an empty list) are refused naming them: value_error at json_config.rewrite_rules', () => {
    for (const [spec, named] of [['it', "'it'"], ['TimeEn,Nope', "'Nope'"], ['timeen', "'timeen'"], [' , ', 'no rewrite rule']] as const) {
      let err: unknown;
      try {
        validateTtsJsonConfig({ rewrite_rules: spec });
      } catch (e) {
        err = e;
      }
      expect(err, spec).toBeInstanceOf(VoicewireError);
      const issue = ((err as VoicewireError).details as { issues: Array<{ loc: unknown[]; type: string; msg: string }> }).issues[0]!;
      expect(issue).toMatchObject({ loc: ['json_config', 'rewrite_rules'], type: 'value_error' });
      expect(issue.msg).toContain(named);
    }
  });

  it('aliases expand to the rules of their language, in order, each once', () => {
    expect(parseRewriteRules('en').rules).toEqual(['TimeEn', 'Date', 'AlNum', 'NumberEn', 'EmailEn', 'UrlEn', 'PhoneEn']);
    expect(parseRewriteRules('es').rules).toEqual(['Date', 'AlNum', 'NumberEs', 'EmailEs', 'UrlEs', 'PhoneEs']);
    expect(parseRewriteRules('en,fr').rules).toEqual([...REWRITE_RULE_ALIASES.en, 'TimeFr', 'NumberFr', 'EmailFr', 'UrlFr', 'PhoneFr']);
    expect(parseRewriteRules('TimeEn, Date').rules).toEqual(['TimeEn', 'Date']);
    const all = new Set<RewriteRuleName>(Object.values(REWRITE_RULE_ALIASES).flat());
    expect([...all].sort()).toEqual([...REWRITE_RULE_NAMES].sort());
  });
});

describe('rewrite rules: the documented effects', () => {
  it('Date: 12/31/2020 → 12-31 2020', () => {
    expect(rw('on 12/31/2020.', 'Date')).toBe('on 12-31 2020.');
    for (const lang of ['en', 'fr', 'de', 'es', 'pt']) expect(rw('12/31/2020', lang), lang).toBe('12-31 2020');
  });

  it('TimeEn: 12:30 → 12.30, 3:45PM! → 3.45PM!; TimeFr: 14:00? → 14h00?; TimeDe: 14:30 → 14 Uhr 30', () => {
    expect(rw('at 12:30 or 3:45PM!', 'TimeEn')).toBe('at 12.30 or 3.45PM!');
    expect(rw('à 14:00?', 'TimeFr')).toBe('à 14h00?');
    expect(rw('um 14:30 oder 9:00.', 'TimeDe')).toBe('um 14 Uhr 30 oder 9 Uhr.');
    expect(rw('12:30', 'en')).toBe('12.30');
    expect(rw('14:00?', 'fr')).toBe('14h00?');
    // Spanish and Portuguese have no time rule: the time is left as written.
    expect(rw('14:00', 'es')).toBe('14:00');
    expect(rw('14:00', 'pt')).toBe('14:00');
    // Mixed: the time rule named first wins.
    expect(rw('14:00', 'fr,en')).toBe('14h00');
    expect(rw('14:00', 'TimeEn,Date')).toBe('14.00');
  });

  it('Number: years and numbers below 1000 are kept, the rest expanded (en, fr, de, es, pt)', () => {
    expect(rw('1234 and -4500 in 1999, 999 and 2100.', 'NumberEn')).toBe('1 thousand 234 and minus 4 thousand 500 in 1999, 999 and 2100.');
    expect(rw('1,234,567', 'NumberEn')).toBe('1 million 234 thousand 567');
    expect(rw('1234 et 2000000', 'NumberFr')).toBe('mille 234 et 2 millions');
    expect(rw('-3000000', 'fr')).toBe('moins 3 millions');
    expect(rw('1234 und 1.500.000', 'NumberDe')).toBe('tausend 234 und 1 Million 500 tausend');
    expect(rw('1234 y 2000000', 'NumberEs')).toBe('mil 234 y 2 millones');
    expect(rw('3000000000', 'es')).toBe('3 mil millones');
    expect(rw('1234 e 1000000', 'NumberPt')).toBe('mil 234 e 1 milhão');
    expect(rw('2500,5', 'pt')).toBe('2 mil 500,5');
    expect(rw('1900 2100 2101 1899', 'en')).toBe('1900 2100 2 thousand 101 1 thousand 899');
  });

  it('Email and Url: spelled with the language\'s words for the symbols', () => {
    expect(rw('write to john.doe@example.com.', 'EmailEn')).toBe('write to john dot doe at example dot com.');
    expect(rw('jean@exemple.fr', 'EmailFr')).toBe('jean arobase exemple point fr');
    expect(rw('max_m@web.de', 'EmailDe')).toBe('max Unterstrich m at web Punkt de');
    expect(rw('ana@correo.es', 'EmailEs')).toBe('ana arroba correo punto es');
    expect(rw('joao@mail.com.br', 'EmailPt')).toBe('joao arroba mail ponto com ponto br');
    expect(rw('see https://example.com/a-b', 'UrlEn')).toBe('see https colon slash slash example dot com slash a dash b');
    expect(rw('www.site.fr', 'UrlFr')).toBe('www point site point fr');
    expect(rw('example.com', 'UrlDe')).toBe('example Punkt com');
    expect(rw('www.sitio.es', 'UrlEs')).toBe('www punto sitio punto es');
    expect(rw('www.site.com.br', 'UrlPt')).toBe('www ponto site ponto com ponto br');
  });

  it('Phone: digit by digit, groups apart, in each language', () => {
    expect(rw('call +1-555-123-4567.', 'PhoneEn')).toBe('call plus 1, 5 5 5, 1 2 3, 4 5 6 7.');
    expect(rw('+33612345678', 'PhoneFr')).toBe('plus 3 3 6 1 2 3 4 5 6 7 8');
    expect(rw('030-1234567', 'PhoneDe')).toBe('0 3 0, 1 2 3 4 5 6 7');
    expect(rw('+34-912-345-678', 'PhoneEs')).toBe('más 3 4, 9 1 2, 3 4 5, 6 7 8');
    expect(rw('+55-11-91234-5678', 'PhonePt')).toBe('mais 5 5, 1 1, 9 1 2 3 4, 5 6 7 8');
    // A plain number is not a phone number.
    expect(rw('5551234', 'PhoneEn')).toBe('5551234');
  });

  it('AlNum: codes spelled; words, numbers and 10am/3rd are not codes', () => {
    expect(rw('code AB12C, flight LH400.', 'AlNum')).toBe('code A B 1 2 C, flight L H 4 0 0.');
    expect(rw('at 10am on the 3rd', 'AlNum')).toBe('at 10am on the 3rd');
    expect(rw('hello 1234', 'AlNum')).toBe('hello 1234');
  });

  it('a rule not named does nothing; text without a match passes unchanged', () => {
    expect(rw('12:30 on 12/31/2020', 'NumberEn')).toBe('12:30 on 12/31/2020');
    expect(rw('plain words, no numbers', 'en,fr,de,es,pt')).toBe('plain words, no numbers');
  });
});
