/**
 * Speech engines: espeak-ng TTS and pocketsphinx STT (README "Engines").
 *
 * - Time to first audio (TTFA) of a 10-word sentence: from `open()` (voice resolved) and
 *   `text()` + `flush()` to the first 80 ms frame emitted; the engine is loaded and warmed
 *   beforehand, as in a running server. Peer: the native `espeak-ng` command's first byte on
 *   stdout (process start included: what a server that spawns espeak-ng per request would see).
 *   Interleaved rounds; medians, with the per-round ratio's median and spread.
 * - Realtime factor = seconds of audio per second of CPU time (process.cpuUsage), so the figure
 *   does not depend on how busy the machine is; streams one core sustains in real time = that
 *   factor (each stream's work runs on the main thread, one after another).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resampleInt16 } from '../src/audio/resampler.js';
import { loadEspeak } from '../src/engines/espeak-module.js';
import { createEspeakTtsEngine } from '../src/engines/espeak-tts.js';
import { catalogVoices } from '../src/engines/espeak-voices.js';
import { pocketsphinxAvailable } from '../src/engines/pocketsphinx-ffi.js';
import { createPocketsphinxSttEngine } from '../src/engines/pocketsphinx-stt.js';
import { save } from './util.js';

const SENTENCE = 'The quick brown fox jumps over the lazy dog again today.';
const PARAGRAPH =
  'It was a bright cold day in April, and the clocks were striking thirteen. Winston Smith, his chin nuzzled into his breast in an effort to escape the vile wind, slipped quickly through the glass doors of Victory Mansions. The hallway smelt of boiled cabbage and old rag mats. At one end of it a coloured poster, too large for indoor display, had been tacked to the wall.';
const voices = catalogVoices();
const context = { resolveVoice: async (id: string | null) => voices.find((v) => v.uid === id) ?? voices[0], resolvePronunciation: async () => undefined };
const engine = createEspeakTtsEngine(context);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** CPU time (ms) from open to the first frame, per round: what an idle core would take. */
const ttfaCpu: number[] = [];

async function ttfaVoicewire(): Promise<number> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let first = 0;
  const s = await engine.open({ modelName: 'default', outputFormat: 'pcm', jsonConfig: {}, voiceId: voices[0]!.uid }, (e) => {
    if (e.type === 'audio' && first === 0) {
      first = performance.now() - t0;
      const c = process.cpuUsage(c0);
      ttfaCpu.push((c.user + c.system) / 1000);
    }
  });
  await s.text(SENTENCE);
  await s.flush();
  await s.end();
  s.close();
  return first;
}

function ttfaCli(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn('espeak-ng', ['-v', 'en-us', '--stdout', SENTENCE]);
    let first = 0;
    p.stdout.on('data', () => {
      if (first === 0) first = performance.now() - t0;
    });
    p.on('error', reject);
    p.on('close', () => resolve(first));
  });
}

async function ttsRealtime(): Promise<{ realtime: number; audioSeconds: number }> {
  let samples = 0;
  const t0 = process.cpuUsage();
  const s = await engine.open({ modelName: 'default', outputFormat: 'pcm', jsonConfig: {}, voiceId: voices[0]!.uid }, (e) => {
    if (e.type === 'audio') samples += e.pcm.length;
  });
  await s.text(PARAGRAPH);
  await s.end();
  s.close();
  const u = process.cpuUsage(t0);
  return { realtime: samples / 48000 / ((u.user + u.system) / 1e6), audioSeconds: samples / 48000 };
}

async function sttRealtime(pcm24: Int16Array): Promise<number> {
  const s = await createPocketsphinxSttEngine().open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: {} }, () => {});
  const t0 = process.cpuUsage();
  for (let i = 0; i + 1920 <= pcm24.length; i += 1920) await s.push(pcm24.subarray(i, i + 1920));
  await s.end?.();
  const u = process.cpuUsage(t0);
  s.close();
  return pcm24.length / 24000 / ((u.user + u.system) / 1e6);
}

async function main(): Promise<void> {
  await loadEspeak();
  await ttfaVoicewire(); // warm the JIT
  const hasCli = (() => {
    try {
      execFileSync('espeak-ng', ['--version']);
      return true;
    } catch {
      return false;
    }
  })();
  const ours: number[] = [];
  const cli: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < 15; round++) {
    const a = await ttfaVoicewire();
    ours.push(a);
    if (hasCli) {
      const b = await ttfaCli();
      cli.push(b);
      ratios.push(b / a);
    }
  }
  ratios.sort((x, y) => x - y);
  console.log(`\nTTS time to first audio, 10-word sentence (15 interleaved rounds)`);
  console.log(`  voicewire espeak engine   ${median(ours).toFixed(1)} ms median (min ${Math.min(...ours).toFixed(1)}, max ${Math.max(...ours).toFixed(1)})`);
  console.log(`  voicewire CPU time to first audio ${median(ttfaCpu.slice(1)).toFixed(1)} ms median (what an idle core takes)`);
  if (hasCli) console.log(`  espeak-ng command         ${median(cli).toFixed(1)} ms median; per-round ratio command/voicewire ${median(ratios).toFixed(2)} (${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)})`);
  const tts: number[] = [];
  for (let i = 0; i < 5; i++) tts.push((await ttsRealtime()).realtime);
  console.log(`\nTTS realtime factor (paragraph, CPU time): ${median(tts).toFixed(0)}x → ${Math.floor(median(tts))} streams per core in real time; ${(1000 / median(tts)).toFixed(1)} ms CPU per second of speech`);
  const out: Record<string, unknown> = { ttfaMs: { voicewire: median(ours), voicewireCpu: median(ttfaCpu.slice(1)), espeakCli: hasCli ? median(cli) : null, ratioMedian: hasCli ? median(ratios) : null }, ttsRealtime: median(tts) };
  const clip = '/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav';
  if (pocketsphinxAvailable() === undefined && existsSync(clip)) {
    const wav = readFileSync(clip);
    const pcm = resampleInt16(new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + 44 + ((wav.length - 44) & ~1))), 16000, 24000);
    await sttRealtime(pcm); // loads the model
    const stt: number[] = [];
    for (let i = 0; i < 3; i++) stt.push(await sttRealtime(pcm));
    console.log(`STT realtime factor (LibriVox clip, CPU time): ${median(stt).toFixed(2)}x → ${Math.floor(median(stt))} streams per core in real time; ${(1000 / median(stt)).toFixed(0)} ms CPU per second of audio`);
    out.sttRealtime = median(stt);
  } else console.log('STT: pocketsphinx or its test data is not installed; skipped');
  save('engines', out);
}

await main();
