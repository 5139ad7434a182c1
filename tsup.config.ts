import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The library: platform-neutral core at ".", Node adapters at "./node".
    entry: { index: 'src/index.ts', node: 'src/node/index.ts', client: 'src/client/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    treeshake: true,
    // One shared chunk for both entries in CJS too: voicewire and voicewire/node must share one libopus
    // heap, one resampler cache and the same classes (instanceof across the two entries).
    splitting: true,
  },
  {
    entry: { cli: 'src/cli/main.ts' },
    format: ['esm'],
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
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
  },
]);
