// Run by client-node-lines.test.ts under another Node binary: `node client-on-node.mjs DIST_CLIENT BASE KEY`.
// Uses voicewire/client (the platform's WebSocket) with an API key: TTS and STT over WebSockets,
// then prints one JSON line: what it got, or the error it met.
const [distClient, baseUrl, apiKey] = process.argv.slice(2);
const { createClient } = await import(distClient);
let tokenFetches = 0;
const countingFetch = (url, init) => {
  if (String(url).includes('/api-keys/token')) tokenFetches++;
  return fetch(url, init);
};
const out = { node: process.versions.node, globalWebSocket: typeof globalThis.WebSocket === 'function' };
try {
  const client = createClient({ baseUrl, apiKey, fetch: countingFetch, retry: { attempts: 1 } });
  const spoken = await client.tts({ text: 'Hello there, how are you today?', outputFormat: 'wav' });
  out.ttsBytes = spoken.audio.length;
  out.ttsWords = spoken.words.map((w) => w.text);
  const heard = await client.stt(spoken.audio, { inputFormat: 'wav', language: 'en' });
  out.sttText = heard.text;
  // A second TTS socket: the temporary token is reused, not fetched again.
  const again = await client.tts({ text: 'Once more.', outputFormat: 'pcm' });
  out.againBytes = again.audio.length;
  client.close();
} catch (err) {
  out.error = { code: err?.code, message: err?.message };
}
out.tokenFetches = tokenFetches;
console.log(JSON.stringify(out));
