import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { speechWav, startTwoTenants, sttFlood, warmUp, sttProbe } from './tenant-fairness.js';
function threads(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const st = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    const name = /\((.*)\)/.exec(st)![1]!;
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    const cpu = Number(f[11]) + Number(f[12]);
    m.set(`${name}:${t}`, cpu);
  }
  return m;
}
const dir = mkdtempSync(join(tmpdir(), 'vw-probe-'));
const { s, otherKey } = await startTwoTenants(dir);
const flood = sttFlood(s.wsBase, s.key, new Uint8Array(speechWav(Number(process.env.SECS ?? 120))));
await warmUp(flood, 400);
const a = threads(s.child.pid!);
const t0 = Date.now();
const clip = new Uint8Array(speechWav(4));
const r = await sttProbe(s.base, otherKey, clip);
await new Promise((res) => setTimeout(res, Math.max(0, 8000 - (Date.now() - t0))));
const b = threads(s.child.pid!);
console.log('probe', r.ms.toFixed(0), r.failed ?? '');
for (const [k, v] of b) { const d = v - (a.get(k) ?? 0); if (d > 5) console.log(k, d); }
flood.stop();
await s.stop();
