/**
 * The real Silero VAD (MIT), as the npm package `@livekit/agents-plugin-silero` ships it
 * (`dist/silero_vad.onnx`, a dev dependency). `VOICEWIRE_SILERO_VAD` names another copy (a local
 * run before the package is installed). Tests needing it skip without it, except in CI, where
 * they fail: a missing model must not pass unnoticed.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { inCI } from '../product/describe-built.js';

function find(): string | undefined {
  const env = process.env['VOICEWIRE_SILERO_VAD'];
  if (env !== undefined && env !== '') return env;
  try {
    const main = createRequire(import.meta.url).resolve('@livekit/agents-plugin-silero');
    const file = join(dirname(main), 'silero_vad.onnx');
    return existsSync(file) ? file : undefined;
  } catch {
    return undefined;
  }
}

/** The model file, or undefined when it is not installed. */
export const sileroModel: string | undefined = find();

/** True when tests needing the model run (it is there, or this is CI: they then fail naming it). */
export const sileroTestsRun = sileroModel !== undefined || inCI;

/** The model file; throws naming the package when it is missing. */
export function requireSileroModel(): string {
  if (sileroModel === undefined) throw new Error('the Silero VAD is missing: npm install --save-dev @livekit/agents-plugin-silero (its dist/silero_vad.onnx)');
  return sileroModel;
}
