/**
 * GET /openapi.json (the OpenAPI 3.1 document, src/server/openapi/document.ts) and GET /docs (a
 * reference page made from it). No key: the document says what the server accepts, nothing about
 * its callers. Built once per server (its limits are part of it).
 */
import type { ServerContext, RouteModule } from '../context.js';
import { buildOpenApiDocument } from '../openapi/document.js';
import { renderOpenApiHtml } from '../openapi/html.js';

const built = new WeakMap<ServerContext, { json: string; html: string }>();

function documentOf(ctx: ServerContext): { json: string; html: string } {
  let d = built.get(ctx);
  if (d === undefined) {
    const doc = buildOpenApiDocument({ limits: ctx.config.limits, version: ctx.version });
    d = { json: JSON.stringify(doc), html: renderOpenApiHtml(doc) };
    built.set(ctx, d);
  }
  return d;
}

export const openApiRoutes: RouteModule = {
  http: [
    {
      method: 'GET',
      path: '/openapi.json',
      handle: async ({ ctx }, _req, res) => {
        const { json } = documentOf(ctx);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
        res.end(json);
      },
    },
    {
      method: 'GET',
      path: '/docs',
      handle: async ({ ctx }, _req, res) => {
        const { html } = documentOf(ctx);
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
        res.end(html);
      },
    },
  ],
};
