/**
 * A readable reference page (/api/docs) made from the OpenAPI document: one section per
 * operation (parameters, body, answers) and one table per schema. Plain HTML and a little CSS,
 * nothing fetched from elsewhere.
 */
type Json = Record<string, unknown>;

const esc = (s: unknown): string => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Inline `code` spans of the document's Markdown. */
const md = (s: unknown): string => esc(s).replace(/`([^`]+)`/g, '<code>$1</code>');
const anchor = (name: string): string => `schema-${name.replace(/[^A-Za-z0-9]/g, '-')}`;

/** One line describing a schema: its type, constraints and default; `$ref`s become links. */
export function describeSchema(s: unknown): string {
  if (typeof s !== 'object' || s === null) return 'any';
  const o = s as Json;
  if (typeof o['$ref'] === 'string') {
    const name = o['$ref'].split('/').pop()!;
    return `<a href="#${anchor(name)}">${esc(name)}</a>`;
  }
  for (const k of ['anyOf', 'oneOf'] as const) if (Array.isArray(o[k])) return (o[k] as unknown[]).map(describeSchema).join(' | ');
  let out = o['type'] === 'array' ? `array of ${describeSchema(o['items'])}` : esc(o['type'] ?? 'any');
  const facts: string[] = [];
  if ('const' in o) facts.push(`= ${esc(JSON.stringify(o['const']))}`);
  if (Array.isArray(o['enum'])) facts.push(`one of ${(o['enum'] as unknown[]).map((v) => `<code>${esc(v)}</code>`).join(', ')}`);
  for (const [k, label] of [['minimum', '≥'], ['maximum', '≤'], ['minLength', 'length ≥'], ['maxLength', 'length ≤']] as const) if (o[k] !== undefined) facts.push(`${label} ${esc(o[k])}`);
  if (o['format'] !== undefined) facts.push(esc(o['format']));
  if (o['pattern'] !== undefined) facts.push(`matching <code>${esc(o['pattern'])}</code>`);
  if (o['contentMediaType'] !== undefined) facts.push(esc(o['contentMediaType']));
  if (o['default'] !== undefined) facts.push(`default <code>${esc(JSON.stringify(o['default']))}</code>`);
  if (facts.length > 0) out += ` (${facts.join('; ')})`;
  if (o['description'] !== undefined) out += ` — ${md(o['description'])}`;
  return out;
}

function schemaTable(name: string, s: Json): string {
  const props = s['properties'] as Record<string, unknown> | undefined;
  const required = new Set((s['required'] as string[] | undefined) ?? []);
  let html = `<section id="${anchor(name)}"><h3>${esc(name)}</h3>`;
  if (s['description'] !== undefined) html += `<p>${md(s['description'])}</p>`;
  if (props !== undefined && Object.keys(props).length > 0) {
    html += '<table><tr><th>field</th><th>schema</th><th></th></tr>';
    for (const [k, v] of Object.entries(props)) html += `<tr><td><code>${esc(k)}</code></td><td>${describeSchema(v)}</td><td>${required.has(k) ? 'required' : ''}</td></tr>`;
    html += '</table>';
    if (s['additionalProperties'] === false) html += '<p>No other key is accepted.</p>';
  } else {
    html += `<p>${describeSchema({ ...s, description: undefined })}</p>`;
  }
  return html + '</section>';
}

function operation(path: string, method: string, op: Json): string {
  const ws = op['x-websocket'] === true;
  let html = `<section class="op"><h3><span class="m ${ws ? 'ws' : esc(method)}">${ws ? 'WS' : esc(method.toUpperCase())}</span> <code>${esc(path)}</code></h3>`;
  html += `<p><strong>${md(op['summary'] ?? '')}</strong></p>`;
  if (op['description'] !== undefined) html += `<p>${md(op['description'])}</p>`;
  const security = (op['security'] as Json[] | undefined) ?? [];
  html += `<p class="auth">Auth: ${security.length === 0 ? 'none' : security.map((s) => esc(Object.keys(s).join(' + '))).join(' or ')}</p>`;
  const params = (op['parameters'] as Json[] | undefined) ?? [];
  if (params.length > 0) {
    html += '<table><tr><th>parameter</th><th>in</th><th>schema</th></tr>';
    for (const p of params) html += `<tr><td><code>${esc(p['name'])}</code></td><td>${esc(p['in'])}</td><td>${describeSchema(p['schema'])}${p['description'] ? ` — ${md(p['description'])}` : ''}</td></tr>`;
    html += '</table>';
  }
  const body = (op['requestBody'] as Json | undefined)?.['content'] as Record<string, Json> | undefined;
  if (body !== undefined) html += `<p>Body: ${Object.entries(body).map(([t, c]) => `<code>${esc(t)}</code> ${describeSchema(c['schema'])}`).join('; ')}</p>`;
  html += '<table><tr><th>status</th><th>answer</th></tr>';
  for (const [status, r] of Object.entries((op['responses'] as Record<string, Json> | undefined) ?? {})) {
    const content = r['content'] as Record<string, Json> | undefined;
    const forms = content === undefined ? '' : ` ${Object.entries(content).map(([t, c]) => `<code>${esc(t)}</code> ${describeSchema(c['schema'])}`).join('; ')}`;
    html += `<tr><td>${esc(status)}</td><td>${md(r['description'] ?? '')}${forms}</td></tr>`;
  }
  return html + '</table></section>';
}

/** The reference page of an OpenAPI document. */
export function renderOpenApiHtml(doc: Json): string {
  const info = doc['info'] as Json;
  const paths = doc['paths'] as Record<string, Record<string, Json>>;
  const schemas = ((doc['components'] as Json)['schemas'] ?? {}) as Record<string, Json>;
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const tag = ((op['tags'] as string[] | undefined) ?? ['Other'])[0]!;
      byTag.set(tag, [...(byTag.get(tag) ?? []), operation(path, method, op)]);
    }
  }
  const css =
    'body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}code{background:#f3f3f3;padding:0 .2em}' +
    'table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}' +
    '.op{border-top:1px solid #ccc;padding-top:.5rem}.m{display:inline-block;min-width:4em;text-align:center;color:#fff;border-radius:3px;background:#555}' +
    '.post{background:#2a7}.get{background:#27a}.put{background:#a72}.delete{background:#a33}.ws{background:#73a}.auth{color:#666}';
  let html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(info['title'])} API reference</title><style>${css}</style></head><body>`;
  html += `<h1>${esc(info['title'])} ${esc(info['version'])}: API reference</h1><p>${md(info['description'] ?? '')}</p><p>Machine-readable: <a href="openapi.json">openapi.json</a> (OpenAPI ${esc(doc['openapi'])}).</p>`;
  html += `<nav><ul>${[...byTag.keys()].map((t) => `<li><a href="#tag-${anchor(t)}">${esc(t)}</a></li>`).join('')}<li><a href="#schemas">Schemas</a></li></ul></nav>`;
  for (const [tag, ops] of byTag) html += `<h2 id="tag-${anchor(tag)}">${esc(tag)}</h2>${ops.join('')}`;
  html += '<h2 id="schemas">Schemas</h2>' + Object.entries(schemas).map(([n, s]) => schemaTable(n, s)).join('');
  return html + '</body></html>';
}
