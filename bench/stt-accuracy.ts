/**
 * `npx tsx bench/stt-accuracy.ts`: word error rate of the pocketsphinx STT engine on real English
 * speech with reference transcripts: the LibriVox clips of Debian's `pocketsphinx-testdata`
 * (/usr/share/pocketsphinx/test/data/librivox, 5 read sentences of "Sense and Sensibility").
 * Nothing is tuned to these clips; text is only lower-cased and stripped of punctuation (wer.ts).
 *
 * Side by side: the same model through Debian's own `pocketsphinx_continuous` (one-shot, whole
 * file), to show what streaming through voicewire (24 kHz frames, resampled to 16 kHz, utterances
 * cut by pocketsphinx's VAD, words sent before the utterance ends) costs or gains.
 * `PS_OPTS='{"settleSeconds":0.6,"stableFrames":5}'` tries other engine options (latency/accuracy).
 * `--short`: the first two clips only.
 *
 * Latency of the first `text` per clip, two ways: the audio pushed when it came out (seconds of the
 * clip, independent of machine load) and wall-clock ms from the first push (frames pushed as fast as
 * the engine takes them, so this is CPU time on a loaded machine).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { resampleInt16 } from '../src/audio/resampler.js';
import { DEBIAN_EN_US_MODEL, pocketsphinxModelFromDir } from '../src/engines/pocketsphinx-ffi.js';
import { createPocketsphinxSttEngine } from '../src/engines/pocketsphinx-stt.js';
import { save } from './util.js';
import { wordErrorRate } from './wer.js';

const DIR = '/usr/share/pocketsphinx/test/data/librivox';

interface Transcript {
  text: string;
  seconds: number;
  /** Audio pushed when the first `text` came out, seconds. */
  firstTextAudio: number;
  /** Wall-clock ms from the first push to the first `text`. */
  firstTextMs: number;
}

async function transcribe(pcm16k: Int16Array): Promise<Transcript> {
  const pcm = resampleInt16(pcm16k, 16000, 24000);
  const words: string[] = [];
  let pushed = 0;
  let firstTextAudio = NaN;
  let firstTextMs = NaN;
  let start = 0;
  const s = await createPocketsphinxSttEngine(JSON.parse(process.env.PS_OPTS ?? '{}')).open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: { language: 'en' } }, (e) => {
    if (e.type !== 'text') return;
    if (words.length === 0) {
      firstTextAudio = Math.min(pushed, pcm.length) / 24000;
      firstTextMs = performance.now() - start;
    }
    words.push(e.text);
  });
  const t0 = process.cpuUsage();
  start = performance.now();
  for (let i = 0; i < pcm.length; i += 1920) {
    const f = new Int16Array(1920);
    f.set(pcm.subarray(i, i + 1920));
    pushed = i + 1920;
    await s.push(f);
  }
  await s.end?.();
  const used = process.cpuUsage(t0);
  const seconds = (used.user + used.system) / 1e6;
  s.close();
  return { text: words.join(' '), seconds, firstTextAudio, firstTextMs };
}

async function main(): Promise<void> {
  if (!existsSync(DIR)) {
    console.log('pocketsphinx-testdata is not installed: apt-get install pocketsphinx-testdata');
    process.exit(1);
  }
  const refs = new Map<string, string>();
  for (const line of readFileSync(join(DIR, 'transcription'), 'utf8').split('\n')) {
    const m = /^(.*)\(([^)]+)\)\s*$/.exec(line);
    if (m) refs.set(m[2]!, m[1]!);
  }
  const ours: [string, string][] = [];
  const cli: [string, string][] = [];
  let audio = 0;
  let cpu = 0;
  const firstAudio: number[] = [];
  const firstMs: number[] = [];
  const m = pocketsphinxModelFromDir(DEBIAN_EN_US_MODEL);
  const ids = readFileSync(join(DIR, 'fileids'), 'utf8').split('\n').filter(Boolean);
  for (const id of process.argv.includes('--short') ? ids.slice(0, 2) : ids) {
    const file = join(DIR, `${id}.wav`);
    const wav = readFileSync(file);
    const pcm = new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + 44 + ((wav.length - 44) & ~1)));
    const r = await transcribe(pcm);
    audio += pcm.length / 16000;
    cpu += r.seconds;
    firstAudio.push(r.firstTextAudio);
    firstMs.push(r.firstTextMs);
    ours.push([refs.get(id)!, r.text]);
    let peer = '';
    try {
      peer = execFileSync('pocketsphinx_continuous', ['-infile', file, '-hmm', m.hmm, '-lm', m.lm, '-dict', m.dict, '-logfn', '/dev/null'], { encoding: 'utf8' }).trim().replace(/\n/g, ' ');
    } catch {
      peer = '';
    }
    cli.push([refs.get(id)!, peer]);
    console.log(`${id}\n  ref:       ${refs.get(id)}\n  voicewire: ${r.text}\n  cli:       ${peer}\n  first text after ${r.firstTextAudio.toFixed(2)} s of audio, ${r.firstTextMs.toFixed(0)} ms wall`);
  }
  const a = wordErrorRate(ours);
  const b = wordErrorRate(cli);
  const fmt = (w: typeof a) => `WER ${(w.wer * 100).toFixed(1)} % (${w.ref} words: ${w.sub} sub, ${w.del} del, ${w.ins} ins)`;
  console.log(`\nvoicewire streaming engine: ${fmt(a)}; ${(audio / cpu).toFixed(1)}x realtime per core (CPU time)`);
  console.log(`pocketsphinx_continuous:    ${fmt(b)}`);
  const med = (xs: number[]) => [...xs].sort((p, q) => p - q)[xs.length >> 1]!;
  const mean = (xs: number[]) => xs.reduce((p, q) => p + q, 0) / xs.length;
  console.log(`first text: audio ${firstAudio.map((x) => x.toFixed(2)).join(', ')} s (median ${med(firstAudio).toFixed(2)}, mean ${mean(firstAudio).toFixed(2)}); wall median ${med(firstMs).toFixed(0)} ms`);
  save('stt-accuracy', { voicewire: a, pocketsphinx_continuous: b, realtime: audio / cpu, audioSeconds: audio, firstTextAudioSeconds: firstAudio, firstTextWallMs: firstMs });
}

await main();
