import { basename, dirname, join } from 'node:path';
import { defineConfig, type Options } from 'tsup';

type TsupPlugin = NonNullable<Options['plugins']>[number];

const LIBRARY = { index: 'src/index.ts', 'index-node': 'src/node/core-entry.ts', node: 'src/node/index.ts', engines: 'src/engines/index.ts', server: 'src/server/index.ts', client: 'src/client/index.ts', livekit: 'src/livekit/index.ts' };

/**
 * The `#!/usr/bin/env node` line and the executable bit go on dist/cli.js alone: tsup's `banner`
 * would put the line on every file of the build, the shared chunks and the library entries too.
 */
const cliShebang: TsupPlugin = {
  name: 'cli-shebang',
  renderChunk(code, info) {
    if (info.type !== 'chunk' || basename(info.path) !== 'cli.js') return undefined;
    info.mode = 0o755;
    return code.startsWith('#!') ? undefined : { code: `#!/usr/bin/env node\n${code}` };
  },
};

type EsbuildPlugin = NonNullable<Options['esbuildPlugins']>[number];

/**
 * voicewire/livekit loads its optional peer @livekit/agents with a top-level await
 * (src/livekit/agents.ts), which CommonJS cannot have: the CJS build takes agents-cjs.ts, which
 * `require`s it, in its place.
 */
const livekitCjsLoader: EsbuildPlugin = {
  name: 'livekit-cjs-loader',
  setup(build) {
    // tsup builds CJS with splitting as ESM first (then rollup converts it): its define names the format.
    if (build.initialOptions.define?.['TSUP_FORMAT'] !== '"cjs"') return;
    build.onResolve({ filter: /^\.\/agents\.js$/ }, (args) => (/[\\/]src[\\/]livekit[\\/]/.test(args.importer) ? { path: join(dirname(args.importer), 'agents-cjs.ts') } : undefined));
  },
};

export default defineConfig([
  {
    // The library — the platform-neutral core at ".", the Node adapters at "./node" — and the CLI in
    // one build, so that dist/cli.js imports the chunk the library entries share instead of carrying
    // a second copy of the core.
    entry: { ...LIBRARY, cli: 'src/cli/main.ts' },
    format: ['esm', 'cjs'],
    // Types for the package entries only; the CLI has no importers.
    dts: { entry: LIBRARY },
    // Maps for local stack traces; package.json's "files" keeps them out of the tarball.
    sourcemap: true,
    // dist/web is the page's build below, which runs beside this one.
    clean: ['!web/**'],
    target: 'node20',
    treeshake: true,
    // import.meta.url in the CommonJS build (the engines find their optional packages with it).
    shims: true,
    // One shared chunk for both entries in CJS too: voicewire and voicewire/node must share one libopus
    // heap, one resampler cache and the same classes (instanceof across the two entries).
    splitting: true,
    plugins: [cliShebang],
    esbuildPlugins: [livekitCjsLoader],
    esbuildOptions(options, { format }) {
      // The `bin` is ESM only (package.json "type": "module"): no dist/cli.cjs.
      if (format === 'cjs') options.entryPoints = LIBRARY;
    },
  },
  {
    // The web page of `voicewire serve` (src/page): static files built once, served as they are.
    entry: { app: 'src/page/app.ts' },
    outDir: 'dist/web',
    format: ['esm'],
    platform: 'browser',
    target: 'es2022',
    publicDir: 'src/page/public',
    minify: true,
    clean: true,
  },
]);
