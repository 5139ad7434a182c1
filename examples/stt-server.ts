// An STT server on `ws` (the runner plus a model) and one client: `npx tsx examples/stt-server.ts`.
import { WebSocket, WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import { createSttServerSession, createScriptedSttEngine, readCredentials, toVoicewireError,
         encodeBase64 } from 'voicewire';

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
wss.on('connection', (ws, req) => {
  const engine = createScriptedSttEngine({ frames: { 0: [{ type: 'text', text: 'hello', start_s: 0 }] } });
  const session = createSttServerSession({ engine, transport: {
    send: (t) => new Promise<void>((ok, ko) => ws.send(t, (e) => (e ? ko(e) : ok()))), // backpressure
    close: (code, reason) => ws.close(code, reason) } });
  try { readCredentials({ headers: req.headers, url: req.url ?? '/', route: 'stt' }); }
  catch (e) { return session.fail(toVoicewireError(e)); }                            // error 1008, close
  ws.on('message', (data, binary) => session.receive(binary ? (data as Buffer) : String(data)));
  ws.on('close', () => session.transportClosed());
});
await new Promise((ok) => wss.once('listening', ok));

const { port } = wss.address() as AddressInfo;
const ws = new WebSocket(`ws://127.0.0.1:${port}/speech/asr`, { headers: { 'x-api-key': 'demo' } });
ws.on('open', () => {
  ws.send(JSON.stringify({ type: 'setup', model_name: 'default', input_format: 'pcm' }));
  ws.send(JSON.stringify({ type: 'audio', audio: encodeBase64(new Uint8Array(3840)) })); // one 80 ms frame
  ws.send(JSON.stringify({ type: 'end_of_stream' }));
});
ws.on('message', (data) => console.log(String(data)));
ws.on('close', (code) => { console.log(`closed ${code}`); wss.close(); });
