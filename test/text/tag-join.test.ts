/**
 * Joining TTS text messages (protocol-notes.md: one space between consecutive messages) without
 * breaking a tag split across them (issue 21: `"<br"` + `"eak …"` was read aloud).
 */
import { describe, expect, it } from 'vitest';
import { parseTags, textJoiner, unfinishedTag } from '../../src/text/tags.js';

/** The text the server builds from the messages, as tts-session joins them. */
function joined(pieces: string[]): string {
  let text = '';
  let tail = '';
  pieces.forEach((p, i) => {
    const piece = (i > 0 ? textJoiner(tail, p) : '') + p;
    text += piece;
    tail = unfinishedTag(tail + piece);
  });
  return text;
}

describe('textJoiner / unfinishedTag', () => {
  it('a tag split inside a word gets no space; words get one', () => {
    expect(joined(['alpha <break ti', 'me="1.0s" /> beta'])).toBe('alpha <break time="1.0s" /> beta');
    expect(joined(['one <br', 'eak time="0.5s" />', 'two'])).toBe('one <break time="0.5s" /> two');
    expect(joined(['one <flu', 'sh>', 'two'])).toBe('one <flush> two');
    expect(joined(['one <b', 'r', 'eak time="1s" /> two'])).toBe('one <break time="1s" /> two');
    expect(joined(['one <', 'break time="1s" /> two'])).toBe('one <break time="1s" /> two');
    expect(joined(['hello', 'world'])).toBe('hello world');
  });

  it('the space the client split at inside a tag is kept; prose with < is prose', () => {
    expect(joined(['one <break', 'time="1s" /> two'])).toBe('one <break time="1s" /> two');
    expect(joined(['a <', 'b'])).toBe('a < b');
    expect(joined(['x<y', 'z'])).toBe('x<y z');
    expect(joined(['a<b>', 'c'])).toBe('a<b> c');
    expect(joined(['next', ' word'])).toBe('next word');
  });

  it('the joined text parses to the pause the client meant', () => {
    const events = parseTags(joined(['alpha <break ti', 'me="1.0s" /> beta']));
    expect(events.filter((e) => e.type === 'break')).toEqual([{ type: 'break', seconds: 1 }]);
  });

  it('unfinishedTag: only the two tags of the API, bounded by maxTagLength', () => {
    expect(unfinishedTag('say <bre')).toBe('<bre');
    expect(unfinishedTag('say <break time="1')).toBe('<break time="1');
    expect(unfinishedTag('a <flush>')).toBe('');
    expect(unfinishedTag('x<y')).toBe('');
    expect(unfinishedTag(`<break ${'x'.repeat(100)}`)).toBe('');
  });
});
