import { describe, expect, it } from 'vitest';
import { parseCliArgs } from '../../src/cli/args.js';
import { VoicewireError } from '../../src/util/errors.js';

function usageError(argv: string[]): VoicewireError {
  try {
    parseCliArgs(argv);
  } catch (e) {
    expect(e).toBeInstanceOf(VoicewireError);
    expect((e as VoicewireError).code).toBe('CLI_USAGE');
    return e as VoicewireError;
  }
  throw new Error(`expected a usage error for ${argv.join(' ')}`);
}

describe('parseCliArgs', () => {
  it('parses info and convert with every option form', () => {
    expect(parseCliArgs(['info', 'a.wav'])).toEqual({ command: 'info', input: 'a.wav' });
    expect(parseCliArgs(['info', '-', '--from', 'ulaw_8000'])).toEqual({ command: 'info', input: '-', from: 'ulaw_8000' });
    expect(parseCliArgs(['convert', 'in.wav', '--to', 'opus', '-o', 'out.ogg'])).toEqual({
      command: 'convert', input: 'in.wav', to: 'opus', output: 'out.ogg', quality: 'high',
    });
    expect(parseCliArgs(['convert', '-', '--to=pcm_16000', '--from=pcm_24000', '--quality', 'fast'])).toEqual({
      command: 'convert', input: '-', to: 'pcm_16000', from: 'pcm_24000', output: '-', quality: 'fast',
    });
    expect(parseCliArgs(['--help'])).toEqual({ command: 'help' });
    expect(parseCliArgs(['convert', 'x', '--version'])).toEqual({ command: 'version' });
  });

  it('rejects bad command lines with CLI_USAGE and a message that says what is wrong', () => {
    expect(usageError([]).message).toMatch(/missing command/);
    expect(usageError(['play', 'x']).message).toMatch(/unknown command play/);
    expect(usageError(['convert', 'a.wav']).message).toMatch(/--to/);
    expect(usageError(['convert', 'a.wav', '--to']).message).toMatch(/needs a value/);
    expect(usageError(['convert', 'a.wav', 'b.wav', '--to', 'wav']).message).toMatch(/exactly one input/);
    expect(usageError(['convert', 'a.wav', '--to', 'wav', '--quality', 'ultra']).message).toMatch(/high, fast or best/);
    expect(usageError(['convert', 'a.wav', '--bogus', '1']).message).toMatch(/unknown option --bogus/);
    expect(usageError(['info', 'a.wav', '--to', 'wav']).message).toMatch(/does not take --to/);
  });
});
