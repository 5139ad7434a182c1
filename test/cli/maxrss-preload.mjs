// Preloaded into the CLI by test/cli/memory.test.ts: records the process's peak RSS (KiB) at exit.
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  const file = process.env.VOICEWIRE_TEST_MAXRSS_FILE;
  if (file) writeFileSync(file, String(process.resourceUsage().maxRSS));
});
