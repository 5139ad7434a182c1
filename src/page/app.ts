/**
 * The web page of `voicewire serve`: type text and hear it as it streams (Web Audio, playback from
 * the first chunk, each word highlighted at its time), speak and read the transcript word by word
 * (the turn ends when you pause after speaking; the 2 s horizon's probability is plotted live), and
 * design a voice (play each candidate, then keep or discard it).
 *
 * The page never keeps the API key: it trades the key the user pastes for a temporary token
 * (GET /api/api-keys/token, docs/api.md §4.6) and forgets it; every call to speak and listen
 * carries the token. `?token=` in the page's address skips the form. Voice design takes the key
 * from its own field (see "voice design" below).
 */
import { createClient, type VoiceClient } from '../client/index.js';
import type { VoiceCandidate } from '../protocol/resources.js';

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;

/** What the page did, for people who look and for the browser test. */
const stats = { scheduledSamples: 0, wordsShown: 0, ttsAudio: [] as Uint8Array[], transcript: [] as string[], steps: 0, turns: 0, errors: [] as string[] };
(globalThis as { __voicewire?: typeof stats }).__voicewire = stats;

let client: VoiceClient | undefined;
const base = `${location.origin}/api`;

function fail(where: HTMLElement, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  stats.errors.push(message);
  where.textContent = message;
}

async function connect(token: string): Promise<void> {
  client = createClient({ baseUrl: base, token });
  $('auth-state').textContent = 'connected (temporary token)';
  for (const id of ['say', 'mic', 'generate']) $<HTMLButtonElement>(id).disabled = false;
  await loadVoices();
}

$('auth').addEventListener('submit', async (e) => {
  e.preventDefault();
  const input = $<HTMLInputElement>('key');
  const key = input.value.trim();
  input.value = '';
  try {
    const res = await fetch(`${base}/api-keys/token`, { headers: { 'x-api-key': key } });
    if (!res.ok) throw new Error(`the key was refused (HTTP ${res.status}): ${(await res.text()).slice(0, 200)}`);
    const { token } = (await res.json()) as { token: string };
    await connect(token);
  } catch (err) {
    fail($('auth-state'), err);
  }
});

// --- voices ------------------------------------------------------------------------------------

async function loadVoices(): Promise<void> {
  const select = $<HTMLSelectElement>('voice');
  const language = $<HTMLSelectElement>('language').value;
  const voices = await client!.voices.list({ includeCatalog: true });
  select.replaceChildren(
    ...voices
      .filter((v) => language === '' || v.language === language)
      .map((v) => Object.assign(document.createElement('option'), { value: v.uid, textContent: `${v.name} (${v.language}${v.is_catalog ? '' : ', yours'})` })),
  );
}
$('language').addEventListener('change', () => void loadVoices().catch((err) => fail($('tts-state'), err)));

// --- TTS: stream, play, highlight ----------------------------------------------------------------

let audio: AudioContext | undefined;
/** What is scheduled now: a new playback stops it, so two never overlap. */
let playing: AudioBufferSourceNode[] = [];

/**
 * Streams `text` in `voiceId` (a voice or a live candidate, docs/server.md) over the TTS WebSocket
 * with the temporary token and plays it from the first chunk, each next chunk queued right behind
 * the last; each word is shown in `wordsEl` (when given) and highlighted at its time.
 * @returns seconds of audio played.
 */
async function play(voiceId: string, text: string, wordsEl: HTMLElement | null): Promise<number> {
  for (const node of playing) node.stop();
  playing = [];
  wordsEl?.replaceChildren();
  stats.ttsAudio = [];
  audio ??= new AudioContext({ sampleRate: 48000 });
  await audio.resume();
  let start: number | undefined;
  let playhead = 0;
  const stream = client!.ttsStream({ outputFormat: 'pcm', ...(voiceId ? { voiceId } : {}) });
  stream.write(text);
  stream.end();
  for await (const e of stream) {
    if (e.type === 'audio') {
      stats.ttsAudio.push(e.audio);
      const pcm = new Int16Array(e.audio.buffer, e.audio.byteOffset, e.audio.byteLength >> 1);
      const buffer = audio.createBuffer(1, pcm.length, 48000);
      const ch = buffer.getChannelData(0);
      for (let i = 0; i < pcm.length; i++) ch[i] = pcm[i]! / 32768;
      const node = audio.createBufferSource();
      node.buffer = buffer;
      node.connect(audio.destination);
      start ??= audio.currentTime + 0.05;
      node.start(start + playhead);
      playing.push(node);
      playhead += pcm.length / 48000;
      stats.scheduledSamples += pcm.length;
    } else if (wordsEl !== null) {
      const span = Object.assign(document.createElement('span'), { textContent: `${e.word.text} ` });
      wordsEl.append(span);
      stats.wordsShown++;
      const at = (start ?? audio.currentTime) + e.word.start_s - audio.currentTime;
      const until = (start ?? audio.currentTime) + e.word.stop_s - audio.currentTime;
      setTimeout(() => span.classList.add('now'), Math.max(0, at * 1000));
      setTimeout(() => span.classList.remove('now'), Math.max(0, until * 1000));
    }
  }
  return playhead;
}

$('say').addEventListener('click', async () => {
  const state = $('tts-state');
  state.textContent = 'speaking…';
  try {
    const seconds = await play($<HTMLSelectElement>('voice').value, $<HTMLTextAreaElement>('text').value, $('words'));
    state.textContent = `done: ${seconds.toFixed(2)} s of audio`;
  } catch (err) {
    fail(state, err);
  }
});

// --- STT: microphone → transcript, turn-taking plot -------------------------------------------

/** An AudioWorklet that hands each block of microphone samples to the page. */
const CAPTURE = `registerProcessor('capture', class extends AudioWorkletProcessor {
  process(inputs) { const ch = inputs[0] && inputs[0][0]; if (ch) this.port.postMessage(ch.slice(0)); return true; }
});`;

let stopListening: (() => void) | undefined;

function plot(values: number[]): void {
  const canvas = $<HTMLCanvasElement>('plot');
  const g = canvas.getContext('2d')!;
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.strokeStyle = '#bbb';
  g.beginPath();
  g.moveTo(0, canvas.height / 2);
  g.lineTo(canvas.width, canvas.height / 2);
  g.stroke();
  g.strokeStyle = '#0a6';
  g.beginPath();
  const shown = values.slice(-canvas.width / 4);
  shown.forEach((p, i) => (i === 0 ? g.moveTo(i * 4, (1 - p) * canvas.height) : g.lineTo(i * 4, (1 - p) * canvas.height)));
  g.stroke();
}

$('mic').addEventListener('click', async () => {
  const button = $<HTMLButtonElement>('mic');
  const state = $('stt-state');
  if (stopListening) return stopListening();
  const transcript = $('transcript');
  const probabilities: number[] = [];
  try {
    const media = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } });
    // 24 kHz: the STT route's `pcm` (docs/api.md §4.4); the browser resamples the microphone.
    const ctx = new AudioContext({ sampleRate: 24000 });
    await ctx.audioWorklet.addModule(URL.createObjectURL(new Blob([CAPTURE], { type: 'text/javascript' })));
    const source = ctx.createMediaStreamSource(media);
    const capture = new AudioWorkletNode(ctx, 'capture');
    const stream = client!.sttStream({ inputFormat: 'pcm' });
    capture.port.onmessage = (m: MessageEvent<Float32Array>) => {
      const f = m.data;
      const pcm = new Int16Array(f.length);
      for (let i = 0; i < f.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(f[i]! * 32767)));
      stream.write(new Uint8Array(pcm.buffer));
    };
    source.connect(capture);
    let stopped = false;
    stopListening = () => {
      if (stopped) return;
      stopped = true;
      capture.port.onmessage = null;
      media.getTracks().forEach((t) => t.stop());
      void ctx.close();
      stream.end();
      stopListening = undefined;
      button.textContent = 'Start listening';
    };
    button.textContent = 'Stop';
    state.textContent = 'listening… (the turn ends when you pause after speaking)';
    let words = 0;
    for await (const e of stream) {
      if (e.type === 'text') {
        words++;
        transcript.append(Object.assign(document.createElement('span'), { textContent: `${e.text} ` }));
        stats.transcript.push(e.text);
      } else if (e.type === 'step') {
        stats.steps++;
        if (e.probability !== null) probabilities.push(e.probability);
        plot(probabilities);
      } else if (e.type === 'turn') {
        // Silence before the first word is no turn (the user has not spoken yet, issue 23): a turn
        // ends only after speech was heard and then paused.
        if (words === 0) continue;
        stats.turns++;
        transcript.lastElementChild?.classList.add('turn');
        state.textContent = 'your turn ended';
        stopListening?.();
      }
    }
    state.textContent = `done: ${stats.transcript.length} words`;
  } catch (err) {
    stopListening?.();
    fail(state, err);
  }
});

// --- voice design --------------------------------------------------------------------------------

/**
 * Voice design writes to the organization (§4.7–§4.9), so it takes the API key, which a temporary
 * token does not stand in for there (docs/server.md "Credentials"). The key is read from its field
 * at each call and kept nowhere else: not in storage, not in the address. Playing a candidate is
 * TTS in its voice, which the token may do.
 */
function designer(): VoiceClient | undefined {
  const key = $<HTMLInputElement>('design-key').value.trim();
  if (key !== '') return createClient({ baseUrl: base, apiKey: key });
  $('design-state').textContent = 'Voice design needs the API key: paste it in the API key field of this section (the temporary token may only speak and listen).';
  $<HTMLInputElement>('design-key').focus();
  return undefined;
}

function candidateItem(c: VoiceCandidate, n: number): HTMLLIElement {
  const state = $('design-state');
  const item = Object.assign(document.createElement('li'), { textContent: `Candidate ${n} (until ${new Date(c.expires_at).toLocaleTimeString()})` });
  item.dataset['embeddingId'] = c.embedding_id;
  const button = (cls: string, label: string, onClick: () => Promise<void>): HTMLButtonElement => {
    const b = Object.assign(document.createElement('button'), { className: cls, textContent: label, type: 'button' });
    b.setAttribute('aria-label', `${label} candidate ${n}`);
    b.addEventListener('click', () => void onClick().catch((err) => fail(state, err)));
    return b;
  };
  const playButton = button('play', 'Play', async () => {
    state.textContent = `playing candidate ${n}…`;
    const seconds = await play(c.embedding_id, $<HTMLInputElement>('sample').value, null);
    state.textContent = `done: candidate ${n}, ${seconds.toFixed(2)} s`;
  });
  const keepButton = button('keep', 'Keep', async () => {
    const voices = designer();
    if (voices === undefined) return;
    const description = $<HTMLInputElement>('prompt').value;
    const name = prompt(`Name of the new voice (candidate ${n})`, description.slice(0, 40)) ?? '';
    if (name.trim() === '') return;
    const voice = await voices.voices.keep(c, { name, description });
    item.replaceChildren(`kept as ${voice.name}`);
    state.textContent = `kept candidate ${n} as ${voice.name}`;
    await loadVoices();
  });
  const discardButton = button('discard', 'Discard', async () => {
    const voices = designer();
    if (voices === undefined) return;
    await voices.voices.discard(c);
    item.remove();
    state.textContent = `discarded candidate ${n}`;
  });
  item.append(playButton, keepButton, discardButton);
  return item;
}

$('generate').addEventListener('click', async () => {
  const list = $('candidates');
  const state = $('design-state');
  const voices = designer();
  if (voices === undefined) return;
  list.replaceChildren();
  state.textContent = 'generating…';
  try {
    const candidates = await voices.voices.design($<HTMLInputElement>('prompt').value, { nSamples: 3, language: $<HTMLSelectElement>('design-language').value });
    list.replaceChildren(...candidates.map((c, i) => candidateItem(c, i + 1)));
    state.textContent = `${candidates.length} candidates: play each, then keep one`;
  } catch (err) {
    fail(state, err);
  }
});

const fromUrl = new URLSearchParams(location.search).get('token');
if (fromUrl) void connect(fromUrl).catch((err) => fail($('auth-state'), err));
