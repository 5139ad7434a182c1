/**
 * Accuracy floor of the streaming STT (issue 22): on real speech with reference transcripts (the
 * LibriVox clips of Debian's pocketsphinx-testdata), the words voicewire streams have a word error
 * rate no higher than Debian's own `pocketsphinx_continuous` on the same files with the same model.
 * The command's output is the oracle, computed here, not a stored number. Two clips (10 s) keep the
 * test short; `npx tsx bench/stt-accuracy.ts` runs all five.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { wordErrorRate } from '../../bench/wer.js';
import { resampleInt16 } from '../../src/audio/resampler.js';
import { pocketsphinxAvailable, pocketsphinxModelFromDir } from '../../src/engines/pocketsphinx-ffi.js';
import { createPocketsphinxSttEngine } from '../../src/engines/pocketsphinx-stt.js';
import { has, needs } from '../helpers/tools.js';

const DIR = '/usr/share/pocketsphinx/test/data/librivox';
const CLIPS = ['sense_and_sensibility_01_austen_64kb-0870', 'sense_and_sensibility_01_austen_64kb-0880'];
const missing = pocketsphinxAvailable() ?? (existsSync(join(DIR, 'transcription')) ? undefined : 'pocketsphinx-testdata not installed');
const ready = missing === undefined && has('pocketsphinx_continuous');
const title = (t: string) => (missing === undefined ? needs('pocketsphinx_continuous', t) : `${t} [SKIPPED: ${missing}; CI installs it]`);

/** The clip's 16 kHz samples (the files are 44-byte-header mono 16-bit WAV). */
function clip(id: string): Int16Array {
  const wav = readFileSync(join(DIR, `${id}.wav`));
  return new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + 44 + ((wav.length - 44) & ~1)));
}

/** What voicewire streams for the clip: 24 kHz, 80 ms frames, the words of every `text`. */
async function streamed(pcm16k: Int16Array): Promise<string> {
  const pcm = resampleInt16(pcm16k, 16000, 24000);
  const words: string[] = [];
  const s = await createPocketsphinxSttEngine({ poolSize: 0 }).open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: { language: 'en' } }, (e) => {
    if (e.type === 'text') words.push(e.text);
  });
  try {
    for (let i = 0; i < pcm.length; i += 1920) {
      const f = new Int16Array(1920);
      f.set(pcm.subarray(i, i + 1920));
      await s.push(f);
    }
    await s.end?.();
  } finally {
    s.close();
  }
  return words.join(' ');
}

describe('pocketsphinx STT accuracy', () => {
  it.skipIf(!ready)(title('streaming word error rate on LibriVox clips is no higher than pocketsphinx_continuous on the same files and model'), async () => {
    const refs = new Map<string, string>();
    for (const line of readFileSync(join(DIR, 'transcription'), 'utf8').split('\n')) {
      const m = /^(.*)\(([^)]+)\)\s*$/.exec(line);
      if (m) refs.set(m[2]!, m[1]!);
    }
    const m = pocketsphinxModelFromDir();
    // The command runs beside the in-process decoding.
    const oracle = Promise.all(
      CLIPS.map(async (id) => {
        const { stdout } = await promisify(execFile)('pocketsphinx_continuous', ['-infile', join(DIR, `${id}.wav`), '-hmm', m.hmm, '-lm', m.lm, '-dict', m.dict, '-logfn', '/dev/null'], { encoding: 'utf8' });
        return stdout.trim().replace(/\n/g, ' ');
      }),
    );
    const ours: [string, string][] = [];
    for (const id of CLIPS) ours.push([refs.get(id)!, await streamed(clip(id))]);
    const cli = (await oracle).map((h, i): [string, string] => [refs.get(CLIPS[i]!)!, h]);
    const a = wordErrorRate(ours);
    const b = wordErrorRate(cli);
    // The command heard something (the oracle is not empty), and we are at least as accurate.
    expect(b.cor).toBeGreaterThan(b.ref / 2);
    expect(a.wer, `voicewire: ${ours.map((p) => p[1]).join(' | ')}\ncommand:   ${cli.map((p) => p[1]).join(' | ')}`).toBeLessThanOrEqual(b.wer);
  }, 180_000);
});
