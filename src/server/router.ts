/**
 * Matches a method and a path (relative to `/api`) against the routes of the modules. Paths are
 * compared without a trailing slash (`/voices/` and `/voices` are one route); `:name` segments
 * capture a parameter.
 */
import type { HttpRoute, RouteModule, WsRoute } from './context.js';

interface Compiled<R> {
  route: R;
  segments: string[];
}

const split = (path: string): string[] => path.split('/').filter((s) => s !== '');

function match(segments: string[], pattern: string[]): Record<string, string> | undefined {
  if (segments.length !== pattern.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p.startsWith(':')) {
      try {
        params[p.slice(1)] = decodeURIComponent(segments[i]!);
      } catch {
        return undefined;
      }
    } else if (p !== segments[i]) return undefined;
  }
  return params;
}

export class Router {
  private readonly http: Compiled<HttpRoute>[] = [];
  private readonly ws: Compiled<WsRoute>[] = [];

  constructor(modules: readonly RouteModule[]) {
    for (const m of modules) {
      for (const r of m.http ?? []) this.http.push({ route: r, segments: split(r.path) });
      for (const r of m.ws ?? []) this.ws.push({ route: r, segments: split(r.path) });
    }
  }

  /** The HTTP route for a method and path, or `methodMismatch` when only the method differs. */
  matchHttp(method: string, path: string): { route: HttpRoute; params: Record<string, string> } | undefined {
    const segs = split(path);
    for (const c of this.http) {
      if (c.route.method !== method) continue;
      const params = match(segs, c.segments);
      if (params) return { route: c.route, params };
    }
    return undefined;
  }

  matchWs(path: string): { route: WsRoute; params: Record<string, string> } | undefined {
    const segs = split(path);
    for (const c of this.ws) {
      const params = match(segs, c.segments);
      if (params) return { route: c.route, params };
    }
    return undefined;
  }
}
