/**
 * The web page of `voicewire serve` at `/` (src/page, built by `npm run build` into dist/web):
 * static files read once at start, served as they are. Only the files of that folder are served
 * (a fixed table, so no path in a request can reach anything else). The page's icon answers
 * `/favicon.ico` too, where browsers and tools look when a page links none (an SVG, served as one).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerResponse } from 'node:http';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Where the built page is: beside the bundled server (dist/web), or dist/web of the checkout when run from src/. */
export function defaultPageDir(): string | null {
  const candidates = [new URL('./web/', import.meta.url), new URL('../../dist/web/', import.meta.url)];
  for (const c of candidates) {
    const dir = fileURLToPath(c);
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return null;
}

/** Serves the page's files; answers whether it handled the request. */
export function createPageHandler(dir: string | null): (pathname: string, res: ServerResponse) => boolean {
  const files = new Map<string, { type: string; body: Buffer }>();
  if (dir !== null) {
    for (const name of readdirSync(dir)) {
      const ext = name.slice(name.lastIndexOf('.'));
      const type = TYPES[ext];
      if (type !== undefined) files.set(`/${name}`, { type, body: readFileSync(join(dir, name)) });
    }
    const index = files.get('/index.html');
    if (index) files.set('/', index);
    const icon = files.get('/favicon.svg');
    if (icon) files.set('/favicon.ico', icon);
  }
  return (pathname, res) => {
    const file = files.get(pathname);
    if (file === undefined) return false;
    res.writeHead(200, {
      'content-type': file.type,
      'content-length': file.body.length,
      'cache-control': 'no-cache',
      // The page talks only to this server; the microphone is its own.
      'content-security-policy': "default-src 'self'; connect-src 'self' ws: wss:; media-src 'self' blob:; worker-src 'self' blob:; script-src 'self' blob:",
      'x-content-type-options': 'nosniff',
    });
    res.end(file.body);
    return true;
  };
}
