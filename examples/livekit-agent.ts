// A LiveKit agent that speaks and listens through voicewire: `npx tsx examples/livekit-agent.ts dev`
// with LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET, VOICEWIRE_BASE_URL and VOICEWIRE_API_KEY set.
// Without a command it checks the two plugins against the voicewire service and exits.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { cli, defineAgent, initializeLogger, ServerOptions, voice, type JobContext } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { STT, TTS } from 'voicewire/livekit';

const service = { baseUrl: process.env.VOICEWIRE_BASE_URL ?? 'http://127.0.0.1:8080/api', apiKey: process.env.VOICEWIRE_API_KEY! };

export default defineAgent({
  entry: async (ctx: JobContext) => {
    await ctx.connect();
    const session = new voice.AgentSession({
      // The service's streaming STT: its VAD steps and turn-taking end the user's turn.
      stt: new STT({ ...service, language: 'en' }),
      // LLM tokens go to the service's TTS socket as they come; audio and word timings come back.
      tts: new TTS({ ...service, voiceId: 'YTpq7expH9539ERJ' }),
      llm: 'openai/gpt-4.1-mini',
      vad: null,
      turnHandling: { turnDetection: 'stt' },
    });
    await session.start({ agent: new voice.Agent({ instructions: 'You are a friendly voice assistant. Answer in one or two sentences.' }), room: ctx.room });
    session.generateReply({ instructions: 'Greet the user.' });
  },
});

if (process.argv[2] !== undefined) {
  cli.runApp(new ServerOptions({ agent: fileURLToPath(import.meta.url) }));
} else {
  initializeLogger({ pretty: false, level: 'warn' });
  // The agent's TTS: text in pieces, as an LLM streams it; frames and word timings out.
  const tts = new TTS(service);
  const stream = tts.stream();
  for (const token of ['Hello', ' from', ' voice', 'wire.']) stream.pushText(token);
  stream.endInput();
  let frames = 0;
  const words: string[] = [];
  for await (const audio of stream) {
    if (typeof audio === 'symbol') break;
    frames++;
    for (const w of audio.timedTranscripts ?? []) words.push(w.text.trim());
  }
  console.log(`TTS: ${frames} frames at ${tts.sampleRate} Hz, words ${words.join(' ')}`);
  // The agent's STT: a human voice (LibriVox, shipped with the package), as 16 kHz frames.
  const wav = readFileSync(createRequire(import.meta.url).resolve('voicewire/fixtures/speech/librivox-0880.wav'));
  const samples = new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length));
  const stt = new STT({ ...service, language: 'en' });
  const heard = await stt.recognize(new AudioFrame(samples, 16000, 1, samples.length));
  console.log(`STT heard: ${heard.alternatives?.[0].text}`);
  await Promise.all([tts.close(), stt.close()]);
}
