import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: keep worker count bounded so tool-driven tests (ffmpeg, opusdec) do not thrash.
    maxWorkers: 2,
  },
});
