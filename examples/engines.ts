// Real speech with voicewire/engines: espeak-ng speaks French, frames of 80 ms at 48 kHz with word
// timestamps (`npx tsx examples/engines.ts`; needs the optional @echogarden/espeak-ng-emscripten).
import { catalogVoices, createEspeakTtsEngine } from 'voicewire/engines';

// A server binds the caller's organization here; this program knows only the catalog.
const voices = catalogVoices();
const tts = createEspeakTtsEngine({
  resolveVoice: async (id) => voices.find((v) => v.uid === id),
  resolvePronunciation: async () => undefined,
});
const voice = voices.find((v) => v.language === 'fr')!;
let frames = 0;
const words: string[] = [];
const stream = await tts.open(
  { modelName: 'default', voiceId: voice.uid, outputFormat: 'pcm', jsonConfig: {} },
  (e) => (e.type === 'audio' ? frames++ : e.type === 'word' ? words.push(`${e.text}@${e.start_s.toFixed(2)}`) : undefined),
);
await stream.text('Bonjour, comment allez-vous ?');
await stream.end();
stream.close();
console.log(`${voice.uid}: ${frames} frames of 80 ms`);
console.log(words.map((w) => w.split('@')[0]).join(' '));
