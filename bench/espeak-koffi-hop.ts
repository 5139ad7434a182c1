/**
 * What the koffi async call costs the system espeak-ng (issue 34, the "glue" of bench/tts-overhead.ts):
 * the same 40 sentences through libespeak-ng.so.1 with a synchronous `espeak_Synth` on the calling
 * thread (the library's callback runs inline) against `espeak_Synth.async` (the synthesis on a libuv
 * thread; each 100 ms buffer hops to the main thread for the callback and back), as the server
 * calls it (espeak-system.ts). Samples are copied out in both. `npx tsx bench/espeak-koffi-hop.ts`.
 *
 * Each measurement is a fresh process (the library has one state per process), the two modes
 * alternated for `HOP_ROUNDS` rounds (default 5); each process speaks the text 6 times and keeps the
 * median of the last 5. Figures: ms of process CPU (all threads) per second of 22.05 kHz audio, and
 * the difference per callback hop. Machine and load are printed beside them.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { machine } from './util.js';

const ROUNDS = Number(process.env.HOP_ROUNDS ?? 5);

/** One process: the text spoken 6 times in `mode`; prints `{ msPerAudioS, callbacksPerAudioS }`. */
const CHILD = `
const koffi = require(process.argv[1]);
const mode = process.argv[2];
const so = koffi.load('libespeak-ng.so.1');
const event = koffi.struct({ type: 'int', unique_identifier: 'uint', text_position: 'int', length: 'int', audio_position: 'int', sample: 'int', user_data: 'void *', id: 'int64_t' });
const cbT = koffi.pointer(koffi.proto('int', ['int16_t *', 'int', koffi.pointer(event)]));
so.func('int espeak_Initialize(int, int, const char *, int)')(2, 100, null, 0x8000);
so.func('int espeak_SetVoiceByName(const char *)')('en-us');
let n = 0, calls = 0;
const cb = koffi.register((wav, k) => { calls++; if (k > 0) { n += k; new Int16Array(koffi.view(wav, k * 2).slice(0)); } return 0; }, cbT);
so.func('espeak_SetSynthCallback', 'void', [cbT])(cb);
const synth = so.func('int espeak_Synth(const char *, size_t, unsigned int, int, unsigned int, unsigned int, void *, void *)');
const words = 'the quick brown fox jumps over a lazy dog near river bank while seven children watched from their small wooden boat and laughed at morning light'.split(' ');
let seed = 1;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const sentences = Array.from({ length: 40 }, () => Array.from({ length: 12 }, () => words[Math.floor(rnd() * words.length)]).join(' ') + '.');
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
(async () => {
  const res = [];
  let perS = 0;
  for (let r = 0; r < 6; r++) {
    n = 0; calls = 0;
    const c0 = cpu();
    for (const s of sentences) {
      if (mode === 'sync') synth(s, Buffer.byteLength(s) + 1, 0, 1, 0, 1, null, null);
      else await new Promise((ok, ko) => synth.async(s, Buffer.byteLength(s) + 1, 0, 1, 0, 1, null, null, (e, x) => (e ? ko(e) : ok(x))));
    }
    if (r > 0) res.push((cpu() - c0) / (n / 22050));
    perS = calls / (n / 22050);
  }
  res.sort((a, b) => a - b);
  console.log(JSON.stringify({ msPerAudioS: res[res.length >> 1], callbacksPerAudioS: perS }));
})();
`;

const koffiPath = createRequire(import.meta.url).resolve('koffi');
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const got: Record<'sync' | 'async', number[]> = { sync: [], async: [] };
let callbacks = 0;
for (let r = 0; r < ROUNDS; r++) {
  for (const mode of (r % 2 ? ['async', 'sync'] : ['sync', 'async']) as ('sync' | 'async')[]) {
    const p = spawnSync(process.execPath, ['-e', CHILD, '--', koffiPath, mode], { encoding: 'utf8' });
    if (p.status !== 0) throw new Error(`espeak-koffi-hop: ${mode} child failed: ${p.stderr}`);
    const f = JSON.parse(p.stdout) as { msPerAudioS: number; callbacksPerAudioS: number };
    got[mode].push(f.msPerAudioS);
    callbacks = f.callbacksPerAudioS;
  }
}
const sync = median(got.sync);
const async = median(got.async);
console.log(`espeak-ng through koffi, sync vs async: ${machine()}, load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
console.log(`${ROUNDS} alternating rounds; median ms of CPU per second of 22.05 kHz audio (min-max across rounds)`);
console.log(`  synchronous espeak_Synth (callback inline)   ${sync.toFixed(3)}  (${Math.min(...got.sync).toFixed(3)}–${Math.max(...got.sync).toFixed(3)})`);
console.log(`  espeak_Synth.async (callback hops)           ${async.toFixed(3)}  (${Math.min(...got.async).toFixed(3)}–${Math.max(...got.async).toFixed(3)})`);
console.log(`  difference ${(async - sync).toFixed(3)} ms per audio second, ${callbacks.toFixed(1)} callbacks per audio second: ${(((async - sync) / callbacks) * 1000).toFixed(1)} µs per hop`);
