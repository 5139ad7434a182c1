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
    // No -o: stdout, but not named (so a terminal is refused); -o - names it.
    expect(parseCliArgs(['convert', '-', '--to=pcm_16000', '--from=pcm_24000', '--quality', 'fast'])).toEqual({
      command: 'convert', input: '-', to: 'pcm_16000', from: 'pcm_24000', quality: 'fast',
    });
    expect(parseCliArgs(['convert', '-', '--to', 'wav', '-o', '-'])).toMatchObject({ output: '-' });
    expect(parseCliArgs(['--help'])).toEqual({ command: 'help' });
    expect(parseCliArgs(['help'])).toEqual({ command: 'help' });
    expect(parseCliArgs(['convert', 'x', '--version'])).toEqual({ command: 'version' });
  });

  it('takes format names in any case', () => {
    expect(parseCliArgs(['convert', 'a', '--to', 'PCM_16000', '--from', 'Ulaw_8000'])).toMatchObject({ to: 'pcm_16000', from: 'ulaw_8000' });
    expect(parseCliArgs(['info', 'a', '--from=PCM'])).toEqual({ command: 'info', input: 'a', from: 'pcm' });
  });

  it('--bitrate for Opus: bit/s or k, 500–512000, opus only', () => {
    expect(parseCliArgs(['convert', 'a', '--to', 'opus', '--bitrate', '32000'])).toMatchObject({ bitrate: 32000 });
    expect(parseCliArgs(['convert', 'a', '--to', 'OPUS', '--bitrate=64k'])).toMatchObject({ to: 'opus', bitrate: 64000 });
    expect(parseCliArgs(['convert', 'a', '--to', 'opus', '--bitrate', '500'])).toMatchObject({ bitrate: 500 });
    expect(parseCliArgs(['convert', 'a', '--to', 'opus', '--bitrate', '512k'])).toMatchObject({ bitrate: 512000 });
    for (const bad of ['499', '512001', '513k', '64.5k', '-1', 'abc', '1e5', '64kbps']) {
      expect(usageError(['convert', 'a', '--to', 'opus', '--bitrate', bad]).message, bad).toMatch(/--bitrate must be an integer 500–512000/);
    }
    expect(usageError(['convert', 'a', '--to', 'wav', '--bitrate', '32000']).message).toMatch(/--to opus only/);
  });

  it('--max-seconds bounds a conversion: seconds above 0, decimals allowed', () => {
    expect(parseCliArgs(['convert', '-', '--to', 'wav', '--max-seconds', '30'])).toMatchObject({ maxSeconds: 30 });
    expect(parseCliArgs(['convert', '-', '--to', 'wav', '--max-seconds=2.5'])).toMatchObject({ maxSeconds: 2.5 });
    expect(parseCliArgs(['convert', '-', '--to', 'wav'])).not.toHaveProperty('maxSeconds');
    for (const bad of ['0', '-1', 'abc', '1e3', 'Infinity', '99999999']) {
      expect(usageError(['convert', '-', '--to', 'wav', '--max-seconds', bad]).message, bad).toMatch(/--max-seconds must be a number of seconds above 0/);
    }
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
