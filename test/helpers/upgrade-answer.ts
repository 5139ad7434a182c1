/**
 * The server's answer to a WebSocket upgrade request, read at the HTTP level: 101 (upgraded; the
 * socket is closed at once) or the status and body of a refusal before the 101, which is what a
 * load balancer can see and retry (issue 36).
 */
import { request } from 'node:http';

/** What the server answered to an upgrade. */
export interface UpgradeAnswer {
  status: number;
  body: string;
}

/** Sends `GET url` with `Upgrade: websocket` (and `headers`); resolves with the answer's status and body (bounded: 10 s). */
export function upgradeAnswer(url: string, headers: Record<string, string> = {}): Promise<UpgradeAnswer> {
  const u = new URL(url.replace(/^ws/, 'http'));
  return new Promise((resolve, reject) => {
    const req = request(u, {
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers },
      timeout: 10_000,
    });
    req.once('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '' });
    });
    req.once('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once('timeout', () => req.destroy(new Error(`no answer to the upgrade of ${url} in 10 s`)));
    req.once('error', reject);
    req.end();
  });
}
