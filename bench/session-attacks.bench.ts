/**
 * Issue 11 §2 and §3, measured as the issue measured them (one STT socket through the server
 * runner, a scripted engine): not a peer comparison but the attack figures, so the closing note
 * can give before and after. `npm run bench -- session-attacks [N]` (N open ids, default 10,000).
 *
 * - §2: open N multiplexed `client_req_id`s; time per `audio` message with N open vs with one;
 *   transport close; and (a fresh socket) `end_of_stream` without id.
 * - §3: with an async engine that answers late, 80,000 `flush` messages, then 160,000 small
 *   `audio` messages, each until the engine has answered everything.
 */
import { createScriptedSttEngine, createSttServerSession, encodeBase64 } from '../src/index.js';

const N = Number(process.argv[2] ?? 10_000);
const audio = encodeBase64(new Uint8Array(640)); // 640 bytes of pcm (24 kHz s16): 13 ms
const ms = (t: number): string => `${(performance.now() - t).toFixed(1)} ms`;

function openSocket(n: number, maxRequests = n + 1) {
  const session = createSttServerSession({ engine: createScriptedSttEngine(), transport: { send: () => undefined, close: () => undefined }, maxRequests } as never);
  for (let i = 0; i < n; i++) session.receive(`{"type":"setup","input_format":"pcm","client_req_id":"r${i}","close_ws_on_eos":false}`);
  return session;
}

function perMessage(session: ReturnType<typeof openSocket>, id: string, count: number): number {
  const msg = `{"type":"audio","audio":"${audio}","client_req_id":"${id}"}`;
  const t = performance.now();
  for (let i = 0; i < count; i++) session.receive(msg);
  return ((performance.now() - t) / count) * 1000;
}

let t = performance.now();
const big = openSocket(N);
console.log(`§2 open ${N} ids: ${ms(t)}`);
const one = openSocket(1);
perMessage(one, 'r0', 200);
console.log(`§2 audio message with ${N} open: ${perMessage(big, 'r7', 2000).toFixed(1)} µs; with 1 open: ${perMessage(one, 'r0', 2000).toFixed(1)} µs`);
t = performance.now();
big.transportClosed();
console.log(`§2 transport close with ${N} open: ${ms(t)}`);
const ending = openSocket(N);
t = performance.now();
ending.receive('{"type":"end_of_stream"}');
console.log(`§2 end_of_stream without id, ${N} open: ${ms(t)}`);

async function queued(kind: 'flush' | 'audio', count: number): Promise<void> {
  // A client that honours backpressure: it stops sending while the runner has paused reading.
  let paused = false;
  let resume: (() => void) | null = null;
  const transport = {
    send: () => undefined,
    close: () => undefined,
    pauseReading: () => void (paused = true),
    resumeReading: () => {
      paused = false;
      resume?.();
    },
  };
  const session = createSttServerSession({ engine: createScriptedSttEngine({ async: true }), transport });
  session.receive('{"type":"setup","input_format":"pcm"}');
  const msg = kind === 'flush' ? '{"type":"flush","flush_id":1}' : `{"type":"audio","audio":"${encodeBase64(new Uint8Array(2))}"}`;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let pauses = 0;
  for (let i = 0; i < count; i++) {
    while (paused) {
      pauses++;
      await new Promise<void>((r) => (resume = r));
    }
    session.receive(msg);
  }
  await session.whenIdle();
  const cpu = process.cpuUsage(cpu0);
  console.log(`§3 ${count} ${kind} messages from a client faster than the engine: ${ms(t0)} wall, ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms CPU, ${pauses} pauses, closed: ${session.closed}`);
}
await queued('flush', Number(process.argv[3] ?? 80_000));
await queued('audio', Number(process.argv[4] ?? 160_000));
