import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readOnnxInfo } from '../../src/engines/onnx-info.js';
import { resolveSherpaSttModel, resolveSherpaTtsModel, SHERPA_VERSION, sherpaPackagePath, validateSherpaModel, type SherpaModel } from '../../src/engines/sherpa-model.js';
import { ModelFolders, type ModelBreak } from '../helpers/sherpa-models.js';
import { VoicewireError } from '../../src/util/errors.js';
import { SherpaPool, type SttJob } from '../../src/engines/sherpa-pool.js';
import { createSherpaSttEngine } from '../../src/engines/sherpa-stt.js';
import { sherpaCatalogVoices } from '../../src/engines/sherpa-tts.js';

const folders = new ModelFolders();
afterAll(() => folders.cleanup());

/** The refusal `f` throws or rejects with. */
async function refusal(f: () => unknown): Promise<VoicewireError> {
  try {
    await f();
  } catch (err) {
    expect(err).toBeInstanceOf(VoicewireError);
    return err as VoicewireError;
  }
  throw new Error('expected a refusal');
}

describe('ONNX metadata without a runtime', () => {
  it('reads the metadata and graph names of the generated models', () => {
    const piper = readOnnxInfo(join(folders.make('piper'), 'model.onnx'));
    expect(piper.metadata).toMatchObject({ comment: 'piper', sample_rate: '22050', n_speakers: '1', language: 'English' });
    expect(piper.inputs).toEqual(['x', 'x_length', 'scales']);
    expect(piper.outputs).toEqual(['audio']);
    const ctc = readOnnxInfo(join(folders.make('nemo-ctc'), 'model.onnx'));
    expect(ctc.metadata).toMatchObject({ subsampling_factor: '4', normalize_type: 'per_feature' });
    expect(ctc.inputs).toEqual(['audio_signal', 'length']);
    expect(ctc.inputShapes).toEqual([['N', 80, 'T'], ['N']]);
    // A Zipformer CTC model declares nothing: sherpa-onnx takes its vocabulary from output 0's dim 2.
    const zip = readOnnxInfo(join(folders.make('zipformer2-ctc'), 'model.onnx'));
    expect(zip.metadata).toEqual({});
    expect(zip.inputs).toEqual(['x', 'x_lens']);
    expect(zip.inputShapes).toEqual([['N', 'T', 80], ['N']]);
    expect(zip.outputs).toEqual(['log_probs', 'log_probs_len']);
    expect(zip.outputShapes).toEqual([['N', 'T2', 35], ['N']]);
  }, 180_000);
});

describe('sherpa-onnx model folders', () => {
  it('detects a Piper voice and a NeMo CTC folder, and each loads and runs in a child process', async () => {
    const tts = resolveSherpaTtsModel(folders.make('piper', { speakers: 3 }));
    expect(tts.type).toBe('piper');
    expect(tts.languages).toEqual(['en']);
    await expect(validateSherpaModel(tts)).resolves.toEqual({ numSpeakers: 3, sampleRate: 22050 });
    const stt = resolveSherpaSttModel(folders.make('nemo-ctc'));
    expect(stt.type).toBe('nemo-ctc');
    await expect(validateSherpaModel(stt)).resolves.toEqual({});
  }, 180_000);

  const cases: Array<[ModelBreak, RegExp, RegExp]> = [
    ['no-metadata', /lacks the metadata "n_speakers"/, /lacks the metadata "vocab_size"/],
    ['bad-tokens', /tokens\.txt line 6 \("ab 999"\)/, /tokens\.txt has no blank token/],
    ['no-tokens', /tokens\.txt is missing/, /tokens\.txt is missing/],
    ['corrupt-onnx', /not a complete ONNX file/, /not a complete ONNX file/],
  ];
  for (const [broken, piperCause, ctcCause] of cases) {
    it(`refuses a folder with ${broken}, naming the folder and the cause`, async () => {
      const piper = folders.make('piper', { broken });
      const e1 = await refusal(() => resolveSherpaTtsModel(piper));
      expect(e1.code).toBe('MODEL_INVALID');
      expect(e1.message).toContain(piper);
      expect(e1.message).toMatch(piperCause);
      const ctc = folders.make('nemo-ctc', { broken });
      if (broken === 'bad-tokens') {
        // A CTC vocabulary may hold multi-character tokens: the generator's bad line is fine there; drop the blank instead.
        const { writeFileSync } = await import('node:fs');
        writeFileSync(join(ctc, 'tokens.txt'), 'a 0\nb 1\n');
      }
      const e2 = await refusal(() => resolveSherpaSttModel(ctc));
      expect(e2.code).toBe('MODEL_INVALID');
      expect(e2.message).toContain(ctc);
      expect(e2.message).toMatch(ctcCause);
    }, 180_000);
  }

  it('the child-process check refuses what would end the server: sherpa-onnx exits on a missing key, here a refusal', async () => {
    // Past the folder checks (as a forced or unforeseen layout would be): the child dies, the caller gets words.
    const dir = folders.make('piper', { broken: 'no-metadata' });
    const model: SherpaModel = { kind: 'tts', dir, type: 'piper', name: 'x', languages: ['en'], config: { model: { vits: { model: join(dir, 'model.onnx'), tokens: join(dir, 'tokens.txt'), dataDir: '/usr/lib/x86_64-linux-gnu/espeak-ng-data' }, numThreads: 1 } } };
    const e = await refusal(() => validateSherpaModel(model));
    expect(e.code).toBe('MODEL_INVALID');
    expect(e.message).toContain(dir);
    expect(e.message).toMatch(/'n_speakers' does not exist in the metadata \(sherpa-onnx exited with code 255\)/);
    const ctcDir = folders.make('nemo-ctc', { broken: 'corrupt-onnx' });
    const ctc: SherpaModel = { kind: 'stt', dir: ctcDir, type: 'nemo-ctc', name: 'y', languages: ['en'], config: { featConfig: { sampleRate: 16000, featureDim: 80 }, modelConfig: { nemoCtc: { model: join(ctcDir, 'model.onnx') }, tokens: join(ctcDir, 'tokens.txt'), numThreads: 1 } } };
    const e2 = await refusal(() => validateSherpaModel(ctc));
    expect(e2.message).toMatch(/Protobuf parsing failed/);
  }, 180_000);

  it('detects a Zipformer CTC folder (no metadata), which loads and runs in a child process', async () => {
    const stt = resolveSherpaSttModel(folders.make('zipformer2-ctc'));
    expect(stt.type).toBe('zipformer2-ctc');
    expect(stt.config).toMatchObject({ modelConfig: { zipformerCtc: { model: join(stt.dir, 'model.onnx') } } });
    await expect(validateSherpaModel(stt)).resolves.toEqual({});
  }, 180_000);

  it('refuses a Zipformer CTC folder sherpa-onnx would misread, from the graph\'s declared shapes', async () => {
    const { writeFileSync } = await import('node:fs');
    // NeMo's graph forced as Zipformer: features are [N, 80, T] there, sherpa-onnx feeds [N, T, 80].
    const nemo = folders.make('nemo-ctc');
    const e1 = await refusal(() => resolveSherpaSttModel(nemo, 'zipformer2-ctc'));
    expect(e1.code).toBe('MODEL_INVALID');
    expect(e1.message).toMatch(/model\.onnx input 0 is \[N, 80, T\]: a Zipformer CTC model takes fbank features \[N, T, 80\]/);
    // Fewer tokens than the model's vocabulary: an id past the table would end the process.
    const short = folders.make('zipformer2-ctc');
    writeFileSync(join(short, 'tokens.txt'), '<blk> 0\na 1\nb 2\n');
    const e2 = await refusal(() => resolveSherpaSttModel(short));
    expect(e2.message).toMatch(/tokens\.txt holds 3 tokens, the model's vocabulary is 35/);
  }, 180_000);

  it('refuses a missing folder and an unknown forced type', async () => {
    expect((await refusal(() => resolveSherpaTtsModel('/nonexistent/voice'))).message).toBe('model folder /nonexistent/voice: does not exist');
    const dir = folders.make('piper');
    expect((await refusal(() => resolveSherpaTtsModel(dir, 'tacotron' as never))).message).toMatch(/unknown TTS model type "tacotron"/);
    expect(resolveSherpaTtsModel(dir, 'vits').type).toBe('vits');
  }, 180_000);
});

describe('the languages an STT folder serves (what json_config.language accepts)', () => {
  it('Whisper: a multilingual model serves the §1 languages of its metadata\'s list, set per request; a .en model English', () => {
    const multi = resolveSherpaSttModel(folders.make('meta-whisper'));
    expect(multi.type).toBe('whisper');
    // all_language_codes lists en, zh, de, es, ru, ko, fr, ja, pt, tr: the five of §1 are there.
    expect(multi.languages).toEqual(['en', 'fr', 'de', 'es', 'pt']);
    expect(multi.perRequestLanguage).toBe(true);
    const en = resolveSherpaSttModel(folders.make('meta-whisper-en'));
    expect(en.type).toBe('whisper');
    expect(en.languages).toEqual(['en']);
    expect(en.perRequestLanguage).toBeFalsy();
  }, 180_000);

  it('Whisper: a key sherpa-onnx reads is missing, or the language lists disagree: refused (sherpa-onnx would end the process)', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const dir = folders.make('meta-whisper');
    const enc = join(dir, 'tiny-encoder.onnx');
    // Rename a key in place (same length): the metadata no longer has "all_language_tokens".
    writeFileSync(enc, Buffer.from(readFileSync(enc).toString('latin1').replace('all_language_tokens', 'all_language_tokenz'), 'latin1'));
    const e = await refusal(() => resolveSherpaSttModel(dir));
    expect(e.code).toBe('MODEL_INVALID');
    expect(e.message).toMatch(/tiny-encoder\.onnx lacks the metadata "all_language_tokens" a multilingual Whisper model needs/);
  }, 180_000);

  it('SenseVoice: its fixed set (zh, en, ja, ko, yue) gives English of the five', () => {
    const sv = resolveSherpaSttModel(folders.make('meta-sense-voice'));
    expect(sv.type).toBe('sense-voice');
    expect(sv.languages).toEqual(['en']);
    // Set once at load: sherpa-onnx's SenseVoice recognizer has no setConfig of its own.
    expect(sv.config).toMatchObject({ modelConfig: { senseVoice: { language: 'en' } } });
    expect(sv.perRequestLanguage).toBeFalsy();
  }, 180_000);

  it('NeMo / Zipformer: the model\'s declared `language`, else --stt-language, else English; a guess is never made', async () => {
    expect(resolveSherpaSttModel(folders.make('nemo-ctc', { language: 'de' })).languages).toEqual(['de']);
    expect(resolveSherpaSttModel(folders.make('zipformer2-ctc', { language: 'English, French' })).languages).toEqual(['en', 'fr']);
    const undeclared = folders.make('nemo-ctc');
    expect(resolveSherpaSttModel(undeclared).languages).toEqual(['en']);
    expect(resolveSherpaSttModel(undeclared, undefined, ['fr', 'es']).languages).toEqual(['fr', 'es']);
    // A declaration is not overridden by the flag: the flag may only narrow it.
    const de = folders.make('nemo-ctc', { language: 'de,en' });
    expect(resolveSherpaSttModel(de, undefined, ['en']).languages).toEqual(['en']);
    const e1 = await refusal(() => resolveSherpaSttModel(de, undefined, ['fr']));
    expect(e1.message).toMatch(/--stt-language fr: the model serves de, en/);
    // A model of none of the five languages serves no request: refused at start.
    const e2 = await refusal(() => resolveSherpaSttModel(folders.make('zipformer2-ctc', { language: 'zh' })));
    expect(e2.code).toBe('MODEL_INVALID');
    expect(e2.message).toMatch(/serves none of en, fr, de, es, pt \(its languages: zh\)/);
  }, 180_000);
});

describe('json_config.language through the sherpa-onnx STT engine', () => {
  /** A pool that records its jobs instead of running a model (a metadata-only Whisper cannot run). */
  function recordingPool(model: SherpaModel): { pool: SherpaPool; jobs: SttJob[] } {
    const jobs: SttJob[] = [];
    const pool = Object.create(SherpaPool.prototype) as SherpaPool;
    Object.defineProperty(pool, 'model', { value: model });
    pool.run = (async (job: SttJob) => {
      jobs.push(job);
      return { text: 'x', tokens: [], timestamps: [] };
    }) as unknown as SherpaPool['run'];
    return { pool, jobs };
  }
  const speech = async (): Promise<Int16Array> => {
    const { readFileSync } = await import('node:fs');
    const { decodeWav } = await import('../../src/audio/wav.js');
    return decodeWav(readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'speech', 'en_24k.wav')), { output: 'int16' }).samples as Int16Array;
  };
  const run = async (pool: SherpaPool, language: string): Promise<void> => {
    const engine = createSherpaSttEngine(pool);
    const stream = await engine.open({ modelName: 'default', inputFormat: 'wav', jsonConfig: { language } as never }, () => undefined);
    const pcm = await speech();
    for (let i = 0; i + 1920 <= pcm.length; i += 1920) await stream.push(pcm.subarray(i, i + 1920));
    await stream.end?.();
    stream.close();
  };

  it('a multilingual Whisper decodes each segment in the request\'s language; outside its set is STT_LANGUAGE_UNSUPPORTED naming the set', async () => {
    const whisper = resolveSherpaSttModel(folders.make('meta-whisper'), undefined, ['en', 'de']);
    const { pool, jobs } = recordingPool(whisper);
    await run(pool, 'de');
    expect(jobs.length).toBeGreaterThan(0);
    expect(jobs.every((j) => j.language === 'de')).toBe(true);
    const e = await refusal(() => createSherpaSttEngine(pool).open({ modelName: 'default', inputFormat: 'wav', jsonConfig: { language: 'fr' } as never }, () => undefined));
    expect(e.code).toBe('STT_LANGUAGE_UNSUPPORTED');
    expect(e.message).toMatch(/"fr" is not served by the model .*; its languages: en, de$/);
  }, 180_000);

  it('a model with one language set at load gets none per segment', async () => {
    const { pool, jobs } = recordingPool(resolveSherpaSttModel(folders.make('nemo-ctc', { language: 'fr' })));
    await run(pool, 'fr');
    expect(jobs.length).toBeGreaterThan(0);
    expect(jobs.every((j) => j.language === undefined)).toBe(true);
  }, 180_000);
});

describe('a Kokoro folder\'s voices', () => {
  it('each speaker named in the metadata is a library voice with its name, language and gender (from Kokoro\'s name prefixes)', () => {
    const model = resolveSherpaTtsModel(folders.make('meta-kokoro'));
    expect(model.type).toBe('kokoro');
    expect(model.speakers?.map((s) => s.name)).toEqual(['af_bella', 'am_adam', 'bf_emma', 'ff_siwis', 'zf_xiaobei']);
    const voices = sherpaCatalogVoices(model, 5);
    expect(voices.map((v) => [v.name, v.language, v.params])).toEqual([
      ['af_bella', 'en', { engine: 'sherpa-onnx', sid: 0 }],
      ['am_adam', 'en', { engine: 'sherpa-onnx', sid: 1 }],
      ['bf_emma', 'en', { engine: 'sherpa-onnx', sid: 2 }],
      ['ff_siwis', 'fr', { engine: 'sherpa-onnx', sid: 3 }],
      ['zf_xiaobei', 'zh', { engine: 'sherpa-onnx', sid: 4 }],
    ]);
    // Tags as the library's voices read them (language, country, gender): an American, a British, a French voice.
    expect(voices[0]!.tags).toEqual(['en', 'us', 'Feminine', 'Neural']);
    expect(voices[1]!.tags).toEqual(['en', 'us', 'Masculine', 'Neural']);
    expect(voices[2]!.tags).toEqual(['en', 'gb', 'Feminine', 'Neural']);
    expect(voices[3]!.tags).toEqual(['fr', 'fr', 'Feminine', 'Neural']);
    expect(new Set(voices.map((v) => v.uid)).size).toBe(5);
  }, 180_000);

  it('without speaker_names the speakers are numbered; a voices.bin of the wrong size or a bad style_dim is refused (sherpa-onnx would end the process)', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const dir = folders.make('meta-kokoro');
    const onnx = join(dir, 'model.onnx');
    const bytes = readFileSync(onnx).toString('latin1');
    writeFileSync(onnx, Buffer.from(bytes.replace('speaker_names', 'speaker_namez'), 'latin1'));
    const numbered = resolveSherpaTtsModel(dir);
    expect(numbered.speakers).toBeUndefined();
    expect(sherpaCatalogVoices(numbered, 5).map((v) => v.name)).toEqual([0, 1, 2, 3, 4].map((i) => `${numbered.name} #${i}`));
    writeFileSync(join(dir, 'voices.bin'), new Uint8Array(100));
    const e = await refusal(() => resolveSherpaTtsModel(dir));
    expect(e.code).toBe('MODEL_INVALID');
    expect(e.message).toMatch(/voices\.bin holds 100 bytes; style_dim 8,1,4 and n_speakers 5 need 640/);
    writeFileSync(onnx, Buffer.from(bytes.replace('8,1,4', '8,2,4'), 'latin1'));
    expect((await refusal(() => resolveSherpaTtsModel(dir))).message).toMatch(/style_dim "8,2,4" is not "L,1,D"/);
  }, 180_000);
});

describe('without sherpa-onnx\'s native binary', () => {
  const root = join(import.meta.dirname, '..', '..');
  it('the package lookup names the missing package and the command that installs it', async () => {
    const { cpSync, mkdirSync, mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    let elsewhere = mkdtempSync(join(tmpdir(), 'vw-no-sherpa-'));
    try {
      // The wrapper without its binary (an install with --omit=optional that kept the wrapper, or another platform).
      mkdirSync(join(elsewhere, 'node_modules'));
      cpSync(join(root, 'node_modules', 'sherpa-onnx-node'), join(elsewhere, 'node_modules', 'sherpa-onnx-node'), { recursive: true });
      const e1 = await refusal(() => sherpaPackagePath(elsewhere));
      expect(e1.code).toBe('ENGINE_UNAVAILABLE');
      expect(e1.message).toMatch(/need the npm package sherpa-onnx-linux-x64 \(sherpa-onnx's native binary for linux-x64\), which is not installed/);
      expect(e1.message).toContain(`npm install sherpa-onnx-node@${SHERPA_VERSION} sherpa-onnx-linux-x64@${SHERPA_VERSION}`);
      // Neither package (another folder, not under the first: Node caches lookups, and walks up to parents' node_modules).
      rmSync(elsewhere, { recursive: true, force: true });
      elsewhere = mkdtempSync(join(tmpdir(), 'vw-no-sherpa-'));
      const e2 = await refusal(() => sherpaPackagePath(elsewhere));
      expect(e2.message).toMatch(/need the npm package sherpa-onnx-node \(sherpa-onnx's Node binding\), which is not installed/);
      expect(e2.message).toContain(`npm install sherpa-onnx-node@${SHERPA_VERSION} sherpa-onnx-linux-x64@${SHERPA_VERSION}`);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
    expect(sherpaPackagePath()).toContain(join('node_modules', 'sherpa-onnx-node'));
  });

  it('the version the message installs is the one package.json pins', async () => {
    const { readFileSync } = await import('node:fs');
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { optionalDependencies: Record<string, string> };
    expect(pkg.optionalDependencies['sherpa-onnx-node']).toBe(SHERPA_VERSION);
    expect(pkg.optionalDependencies['sherpa-onnx-linux-x64']).toBe(SHERPA_VERSION);
  });
});
