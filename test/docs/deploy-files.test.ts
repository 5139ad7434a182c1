/**
 * The deployment files users expect (deploy/, issue 36) are kept true by reading them: no image
 * can be built here, so each command they run is run through the CLI's own flag parser (`serve
 * … --help` exits 0 only when every flag exists), each path they name is checked against the
 * package and this machine's Debian packages, each probe and drain path is asked of a running
 * server, the HPA's metric is read from /metrics, and the compose topology's commands run for
 * real without containers (HAProxy with deploy/haproxy.cfg in front of the two instances).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { DEBIAN_EN_US_MODEL } from '../../src/engines/pocketsphinx-ffi.js';
import { DEFAULT_LIMITS } from '../../src/server/config.js';
import { ensureOrganization } from '../../src/server/bootstrap.js';
import { createKey } from '../../src/server/keys.js';
import { PostgresStore } from '../../src/server/store/postgres-store.js';
import { hasPostgres, startPostgres, type PostgresCluster } from '../helpers/postgres.js';
import { startServer } from '../server/harness.js';
import { CLI, root } from '../product/built-server.js';
import { describeBuilt, inCI } from '../product/describe-built.js';
import { HAPROXY, startTopology, type Topology } from '../product/topology.js';

const deploy = join(root, 'deploy');
const read = (p: string): string => readFileSync(join(deploy, p), 'utf8');

/** Dockerfile instructions: continuation lines joined, comments dropped. */
function instructions(text: string): Array<{ op: string; args: string }> {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

/** `voicewire ARGS --help`: the CLI's parser refuses an unknown flag (exit 2) before it prints the help. */
function cliAccepts(args: readonly string[]): { ok: boolean; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args, '--help'], { encoding: 'utf8', timeout: 20_000 });
  return { ok: r.status === 0, stderr: r.stderr };
}

/** The environment variables `serve --help` documents. */
function documentedEnv(): Set<string> {
  const help = execFileSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' });
  return new Set([...help.matchAll(/VOICEWIRE_[A-Z_]+/g)].map((m) => m[0]));
}

/** Files `npm pack` puts in the package (without running its scripts). */
function packedFiles(): Set<string> {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' });
  return new Set((JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path));
}

/** The files a Debian package installed here (`dpkg -L`), or an empty list when it is not installed. */
function debianFiles(pkg: string): string[] {
  const r = spawnSync('dpkg', ['-L', pkg], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n') : [];
}

const APP = '/app/node_modules/voicewire/';

describeBuilt('deployment files (deploy/)', () => {
  describe('deploy/Dockerfile', () => {
    const steps = instructions(read('Dockerfile'));
    const last = steps.slice(steps.map((s) => s.op).lastIndexOf('FROM'));

    it('runs on Debian slim with espeak-ng and pocketsphinx (the library and model the engines load), as a non-root user', () => {
      expect(last[0]!.args).toMatch(/^node:\d+-(bookworm|trixie)-slim$/);
      // A Node line package.json's engines names (CI runs the product tests on each).
      const major = /^node:(\d+)-/.exec(last[0]!.args)![1]!;
      const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
      expect(engines.split('||').map((r) => r.trim())).toContain(major);
      const apt = last.find((s) => s.op === 'RUN' && s.args.includes('apt-get install'))!.args;
      const pkgs = apt.split(/\s+/).filter((w) => /^[a-z0-9][a-z0-9.+-]+$/.test(w) && !['apt-get', 'install', 'update', 'rm', 'y'].includes(w));
      expect(pkgs).toEqual(expect.arrayContaining(['espeak-ng', 'libpocketsphinx3', 'pocketsphinx-en-us']));
      // The names are checked against what Debian's packages hold on this machine (the same release).
      expect(debianFiles('libpocketsphinx3').some((f) => f.endsWith('/libpocketsphinx.so.3'))).toBe(true);
      expect(debianFiles('pocketsphinx-en-us')).toContain(DEBIAN_EN_US_MODEL);
      expect(debianFiles('espeak-ng').length).toBeGreaterThan(0);
      const user = last.filter((s) => s.op === 'USER').at(-1)!.args;
      expect(user).not.toMatch(/^(root|0)(:|$)/);
    });

    it('starts node itself (exec form, no npm or shell), on a file of the package, with flags the CLI has', () => {
      const entry = JSON.parse(last.find((s) => s.op === 'ENTRYPOINT')!.args) as string[];
      const cmd = JSON.parse(last.find((s) => s.op === 'CMD')!.args) as string[];
      expect(entry[0]).toBe('node');
      expect(entry[1]!.startsWith(APP)).toBe(true);
      expect(packedFiles()).toContain(entry[1]!.slice(APP.length));
      expect(readFileSync(join(root, 'package.json'), 'utf8')).toContain(`"voicewire": "./${entry[1]!.slice(APP.length)}"`);
      expect(cliAccepts(cmd)).toEqual({ ok: true, stderr: '' });
      expect(last.find((s) => s.op === 'STOPSIGNAL')?.args).toBe('SIGTERM');
      const env = last.filter((s) => s.op === 'ENV').flatMap((s) => [...s.args.matchAll(/(VOICEWIRE_[A-Z_]+)=/g)].map((m) => m[1]!));
      const known = documentedEnv();
      for (const name of env) expect(known, name).toContain(name);
    });

    it('checks health on /api/healthz of the port it serves', () => {
      const hc = last.find((s) => s.op === 'HEALTHCHECK')!.args;
      const cmd = JSON.parse(hc.slice(hc.indexOf('CMD') + 3).trim()) as string[];
      expect(cmd[0]).toBe('node');
      expect(cmd.join(' ')).toContain('http://127.0.0.1:8080/api/healthz');
      expect(JSON.parse(last.find((s) => s.op === 'CMD')!.args)).toEqual(expect.arrayContaining(['--port', '8080']));
    });
  });

  describe('deploy/compose.yaml and deploy/haproxy.cfg', () => {
    const compose = parse(read('compose.yaml')) as { services: Record<string, Record<string, unknown>>; networks: Record<string, { ipam: { config: Array<{ subnet: string }> } }> };
    const instances = Object.entries(compose.services).filter(([, s]) => Array.isArray(s['command']) && (s['command'] as string[])[0] === 'serve');

    it('has Postgres, two instances and the balancer, each instance on the Dockerfile, with flags and variables the CLI has', () => {
      expect(Object.keys(compose.services).sort()).toEqual(['balancer', 'postgres', 'voicewire-1', 'voicewire-2']);
      expect(instances.map(([n]) => n)).toEqual(['voicewire-1', 'voicewire-2']);
      const build = compose.services['voicewire-1']!['build'] as { context: string; dockerfile: string };
      expect(existsSync(join(deploy, build.context, build.dockerfile))).toBe(true);
      const known = documentedEnv();
      for (const [name, s] of instances) {
        expect(cliAccepts(s['command'] as string[]), name).toEqual({ ok: true, stderr: '' });
        for (const v of Object.keys(s['environment'] as object)) expect(known, `${name}: ${v}`).toContain(v);
      }
      expect(instances.some(([, s]) => (s['command'] as string[]).includes('--workers'))).toBe(true);
    });

    it("gives the balancer the haproxy.cfg beside it, the addresses it reads, and the address the instances trust", () => {
      const b = compose.services['balancer']!;
      const mount = (b['volumes'] as string[])[0]!.split(':');
      expect(existsSync(join(deploy, mount[0]!))).toBe(true);
      const cfg = read('haproxy.cfg');
      const wanted = new Set([...cfg.replace(/#.*$/gm, '').matchAll(/"\$\{(\w+)\}"/g)].map((m) => m[1]!));
      expect(new Set(Object.keys(b['environment'] as object))).toEqual(wanted);
      const ip = (b['networks'] as Record<string, { ipv4_address: string }>)['voicewire']!.ipv4_address;
      for (const [, s] of instances) expect((s['environment'] as Record<string, string>)['VOICEWIRE_TRUSTED_PROXIES']).toBe(ip);
      expect(ip.startsWith(compose.networks['voicewire']!.ipam.config[0]!.subnet.split('.').slice(0, 3).join('.'))).toBe(true);
      // HAProxy itself accepts the file (names that do not resolve here only warn).
      const env = { ...process.env, ...(b['environment'] as Record<string, string>), VOICEWIRE_BIND: '127.0.0.1:1' };
      if (existsSync(HAPROXY) || inCI) expect(spawnSync(HAPROXY, ['-c', '-f', join(deploy, 'haproxy.cfg')], { env, encoding: 'utf8' }).status).toBe(0);
    });

    describe('its commands, run without containers', () => {
      let pg: PostgresCluster | undefined;
      let topo: Topology | undefined;
      afterAll(() => {
        topo?.destroy();
        pg?.destroy();
      }, 30_000);
      const missing = !existsSync(HAPROXY) ? 'HAProxy' : !hasPostgres() ? 'Postgres' : undefined;

      it.skipIf(missing !== undefined && !inCI)(`HAProxy in front of both instances on one Postgres serves speech from each${missing ? ` [SKIPPED: ${missing} missing]` : ''}`, async () => {
        pg = await startPostgres();
        // The compose commands as they are, but on loopback: --host and --port are the harness's,
        // the store is this cluster, the trusted proxy is the balancer's loopback address.
        const specs = instances.map(([, s]) => {
          const cmd = s['command'] as string[];
          const args = cmd.slice(1).filter((a, i, all) => a !== '--host' && a !== '--port' && all[i - 1] !== '--host' && all[i - 1] !== '--port');
          return { args, env: { ...(s['environment'] as Record<string, string>), VOICEWIRE_STORE: pg!.url(), VOICEWIRE_TRUSTED_PROXIES: '127.0.0.1' } };
        });
        // The first bootstraps (schema, first organization) before the second starts, as depends_on orders it.
        topo = await startTopology(specs);
        const store = new PostgresStore(pg.url());
        try {
          const org = await ensureOrganization(store, 'deploy-test', { credits: 100_000 });
          const { key } = await createKey(store, org.id);
          expect((await fetch(`${topo.balancer.base}/healthz`)).status).toBe(200);
          const served = new Set<string>();
          for (let i = 0; i < 6; i++) {
            const r = await fetch(`${topo.balancer.base}/post/speech/tts`, {
              method: 'POST',
              headers: { 'x-api-key': key, 'content-type': 'application/json' },
              body: JSON.stringify({ text: 'Hello from the compose topology.', output_format: 'pcm_16000', only_audio: true }),
            });
            expect(r.status).toBe(200);
            expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(10_000);
            served.add(r.headers.get('x-served-by') ?? '?');
          }
          expect([...served].sort()).toEqual(['vw1', 'vw2']);
        } finally {
          await store.close();
        }
      }, 120_000);
    });
  });

  describe('deploy/k8s', () => {
    // Manifests are read by path, as kubectl would: untyped.
    type Doc = Record<string, any>;
    const docs: Doc[] = readdirSync(join(deploy, 'k8s'))
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) => parseAllDocuments(read(join('k8s', f))).map((d) => d.toJS() as Doc));
    const of = (kind: string): Doc => docs.find((d) => d['kind'] === kind)!;

    it('has a Deployment, a Service, a PodDisruptionBudget and an HPA, all selecting the same pods', () => {
      expect(docs.map((d) => d['kind']).sort()).toEqual(['Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Service']);
      const labels = of('Deployment')['spec']['template']['metadata']['labels'];
      expect(of('Deployment')['spec']['selector']['matchLabels']).toEqual(labels);
      expect(of('Service')['spec']['selector']).toEqual(labels);
      expect(of('PodDisruptionBudget')['spec']['selector']['matchLabels']).toEqual(labels);
      expect(of('HorizontalPodAutoscaler')['spec']['scaleTargetRef']).toMatchObject({ kind: 'Deployment', name: of('Deployment')['metadata']['name'] });
      const container = of('Deployment')['spec']['template']['spec']['containers'][0];
      expect(container['ports'].map((p: Doc) => p['name'])).toContain(of('Service')['spec']['ports'][0]['targetPort']);
      expect(of('Deployment')['spec']['template']['spec']['securityContext']['runAsNonRoot']).toBe(true);
    });

    it('runs flags and variables the CLI has, and leaves time for the preStop drain and the drain grace', () => {
      const spec = of('Deployment')['spec']['template']['spec'];
      const container = spec['containers'][0];
      expect(cliAccepts(container['args'])).toEqual({ ok: true, stderr: '' });
      const known = documentedEnv();
      // VOICEWIRE_ADMIN_KEY is the preStop hook's, not the server's.
      for (const e of container['env'] as Doc[]) if (e['name'] !== 'VOICEWIRE_ADMIN_KEY') expect(known, e['name']).toContain(e['name']);
      const hook = (container['lifecycle']['preStop']['exec']['command'] as string[]).join(' ');
      const waitMs = Number(/setTimeout\([^,]+,\s*(\d+)\)/.exec(hook)![1]);
      expect(spec['terminationGracePeriodSeconds']).toBeGreaterThan(waitMs / 1000 + DEFAULT_LIMITS.drainGraceSeconds);
    });

    it('probes, drains and scales on what a running server answers', async () => {
      const container = of('Deployment')['spec']['template']['spec']['containers'][0];
      const h = await startServer();
      try {
        const origin = h.base.replace(/\/api$/, '');
        expect((await fetch(`${origin}${container['readinessProbe']['httpGet']['path']}`)).status).toBe(200);
        expect((await fetch(`${origin}${container['livenessProbe']['httpGet']['path']}`)).status).toBe(200);
        // The preStop hook's request, with an instance-admin key: the server drains.
        const hook = (container['lifecycle']['preStop']['exec']['command'] as string[]).join(' ');
        const drain = /fetch\('http:\/\/127\.0\.0\.1:8080(\/api\/drain)', \{ method: '(\w+)'/.exec(hook)!;
        expect((await fetch(`${origin}${drain[1]}`, { method: drain[2], headers: { 'x-api-key': h.adminKey } })).status).toBe(200);
        expect((await fetch(`${origin}${container['readinessProbe']['httpGet']['path']}`)).status).toBe(503);
        // The HPA's metric is one /metrics exports.
        const metric = of('HorizontalPodAutoscaler')['spec']['metrics'][0]['pods']['metric']['name'];
        expect(await (await fetch(`${origin}/metrics`)).text()).toMatch(new RegExp(`^# TYPE ${metric} gauge$`, 'm'));
      } finally {
        await h.close();
      }
    });
  });
});
