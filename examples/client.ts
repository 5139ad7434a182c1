// The SDK against a running `voicewire serve`: `VOICEWIRE_API_KEY=… npx tsx examples/client.ts`.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createClient } from 'voicewire/node';

const client = createClient({ baseUrl: process.env.VOICEWIRE_BASE_URL ?? 'http://127.0.0.1:8080/api', apiKey: process.env.VOICEWIRE_API_KEY! });
// Emma, the library voice every example of the service's docs uses (any server engine speaks it).
const voice = (await client.voices.list()).find((v) => v.uid === 'YTpq7expH9539ERJ')!;
const spoken = await client.tts({ text: 'Hello from voicewire.', voiceId: voice.uid, outputFormat: 'wav' });
console.log(`${voice.name}: ${spoken.audio.length} bytes, words ${spoken.words.map((w) => w.text).join(' ')}`);
// A human voice: three seconds of a public-domain LibriVox reading, shipped with the package.
const clip = readFileSync(createRequire(import.meta.url).resolve('voicewire/fixtures/speech/librivox-0880.wav'));
const heard = await client.stt(clip, { inputFormat: 'wav', language: 'en' });
console.log(`heard: ${heard.text}`);
console.log(`credits left: ${(await client.credits()).remaining_credits}`);
