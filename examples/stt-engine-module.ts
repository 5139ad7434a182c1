// Another STT engine for `voicewire serve --stt-model FILE`: a module whose default export
// implements SttEngine. This one hears nothing and says so every 80 ms.
import type { SttEngine } from 'voicewire';

const engine = {
  open(_config, emit) {
    return {
      info: { delayInFrames: 2 },
      push(_frame) { // 1920 samples at 24 kHz
        emit({ type: 'step', vad: [{ horizon_s: 0.5, inactivity_prob: 1 }, { horizon_s: 1, inactivity_prob: 1 }, { horizon_s: 2, inactivity_prob: 1 }] });
      },
      close() {},
    };
  },
} satisfies SttEngine;
export default engine;

// Run directly, it shows what the runner would see for one frame.
if (import.meta.url === `file://${process.argv[1]}`) {
  const stream = await engine.open({} as never, (e) => console.log(JSON.stringify(e)));
  await stream.push(new Int16Array(1920));
  stream.close();
}
