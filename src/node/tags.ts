/**
 * Node streams for TTS text: the tag parser (text in, TagEvent objects out) and the text chunker
 * (text in, one `text` message string per chunk out). Bytes written to them are decoded as UTF-8
 * with a streaming decoder, so a character may straddle two writes.
 */
import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';
import { createTagParser, type TagEvent, type TagParseErrorDetails, type TagParserOptions } from '../text/tags.js';
import { createTextChunker, type TextChunkerOptions } from '../text/text-chunker.js';
import type { VoicewireError } from '../util/errors.js';
import { nodeStreamOptions } from './stream-options.js';

type StreamOptions = Omit<TransformOptions, 'transform' | 'flush' | 'objectMode' | 'readableObjectMode' | 'writableObjectMode' | 'decodeStrings'>;

/** A Transform from text (strings or UTF-8 bytes) to objects, over a push/flush core. */
class TextTransform<Out> extends Transform {
  private readonly utf8 = new TextDecoder();
  private readonly pushCore: (text: string) => Out[];
  private readonly flushCore: () => Out[];

  constructor(push: (text: string) => Out[], flush: () => Out[], options: StreamOptions) {
    super({ ...options, decodeStrings: false, readableObjectMode: true, writableObjectMode: false });
    this.pushCore = push;
    this.flushCore = flush;
  }

  override _transform(chunk: string | Uint8Array, _encoding: BufferEncoding, callback: TransformCallback): void {
    const text = typeof chunk === 'string' ? chunk : this.utf8.decode(chunk, { stream: true });
    this.run(() => this.pushCore(text), callback);
  }

  override _flush(callback: TransformCallback): void {
    const rest = this.utf8.decode();
    this.run(() => (rest.length > 0 ? [...this.pushCore(rest), ...this.flushCore()] : this.flushCore()), callback);
  }

  private run(step: () => Out[], callback: TransformCallback): void {
    let outs: Out[];
    try {
      outs = step();
    } catch (err) {
      // Under an 'error' policy, deliver what the failing call produced, then fail the stream.
      const details = (err as VoicewireError).details as TagParseErrorDetails | undefined;
      for (const o of (details?.events ?? []) as Out[]) this.push(o);
      callback(err as Error);
      return;
    }
    for (const o of outs) this.push(o);
    callback();
  }
}

/** The tag parser as a Node Transform: text in, {@link TagEvent} objects out. */
export function createTagParserTransform(options?: TagParserOptions & StreamOptions): Transform {
  const { invalidBreak, breakSpacing, maxTagLength, onRepair, ...streamOptions } = nodeStreamOptions(options, 'createTagParserTransform options');
  const parserOptions: TagParserOptions = {};
  if (invalidBreak !== undefined) parserOptions.invalidBreak = invalidBreak;
  if (breakSpacing !== undefined) parserOptions.breakSpacing = breakSpacing;
  if (maxTagLength !== undefined) parserOptions.maxTagLength = maxTagLength;
  if (onRepair !== undefined) parserOptions.onRepair = onRepair;
  const parser = createTagParser(parserOptions);
  return new TextTransform<TagEvent>((t) => parser.push(t), () => parser.flush(), streamOptions);
}

/** The text chunker as a Node Transform: text in, one message string per chunk out (object mode). */
export function createTextChunkerTransform(options?: TextChunkerOptions & StreamOptions): Transform {
  const { minChunkLength, repairTags, maxTagLength, maxWordLength, onRepair, ...streamOptions } = nodeStreamOptions(options, 'createTextChunkerTransform options');
  const chunkerOptions: TextChunkerOptions = {};
  if (minChunkLength !== undefined) chunkerOptions.minChunkLength = minChunkLength;
  if (repairTags !== undefined) chunkerOptions.repairTags = repairTags;
  if (maxTagLength !== undefined) chunkerOptions.maxTagLength = maxTagLength;
  if (maxWordLength !== undefined) chunkerOptions.maxWordLength = maxWordLength;
  if (onRepair !== undefined) chunkerOptions.onRepair = onRepair;
  const chunker = createTextChunker(chunkerOptions);
  return new TextTransform<string>((t) => chunker.push(t), () => chunker.end(), streamOptions);
}
