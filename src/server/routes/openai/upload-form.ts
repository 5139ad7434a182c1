/**
 * Reads the multipart form of `/v1/audio/transcriptions`: its fields, and its `file` part held in
 * memory, each chunk counted against the server's upload budget (upload-budget.ts) as it arrives.
 *
 * Every way the body can end settles the promise (issue 31 §1: a cut-off upload waited forever
 * for busboy's `close`, holding its session slot): the form's end resolves; a client that goes
 * away (abort, the server's 408 on `requestTimeoutMs`), a malformed body, a file over
 * `maxBytes` or a refusal of the budget rejects, and stops reading.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import busboy from 'busboy';
import { VoicewireError } from '../../../util/errors.js';
import type { UploadLease } from '../../upload-budget.js';
import { onRequestGone } from '../../request-gone.js';
import { invalidParam } from './errors.js';

/** Most form fields read, and most bytes of one field (a `prompt` is short text). */
const MAX_FIELDS = 20;
const MAX_FIELD_BYTES = 64 << 10;

/** The `file` part: its name and bytes, in the chunks they came in. */
export interface UploadedFile {
  name: string;
  chunks: Uint8Array[];
  bytes: number;
}

/** A form read whole. */
export interface UploadForm {
  fields: Map<string, string[]>;
  file: UploadedFile | null;
}

/**
 * Reads the form of `req`, the `file` part at most `maxBytes` (413 `LIMIT_EXCEEDED` past it),
 * every byte of it counted in `lease` (its refusals as they are).
 * @throws VoicewireError `INVALID_ARGUMENT` (param `file`) for a body that is not a readable
 *   multipart form, `PROTOCOL_CONNECTION_CLOSED` when the client went away first.
 */
export function readUploadForm(req: IncomingMessage, res: ServerResponse, maxBytes: number, lease: UploadLease): Promise<UploadForm> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { fileSize: maxBytes, files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES } });
    } catch (err) {
      reject(invalidParam('file', `expected a multipart/form-data body: ${(err as Error).message}`));
      return;
    }
    const form: UploadForm = { fields: new Map(), file: null };
    let settled = false;
    const stopWatching = onRequestGone(req, res, () => fail(new VoicewireError('PROTOCOL_CONNECTION_CLOSED', 'the client went away before its upload ended')));
    const done = (): void => {
      settled = true;
      stopWatching();
    };
    /** Stops reading: the rest of the body is not wanted, and the connection closes after the answer. */
    const fail = (err: VoicewireError): void => {
      if (settled) return;
      done();
      req.unpipe(bb);
      bb.destroy();
      // An answer before the body's end: the connection is closed after it rather than read to the
      // end (a refused 50 MiB upload is not received in full).
      if (!res.headersSent) res.setHeader('connection', 'close');
      req.resume();
      form.file = null;
      reject(err);
    };
    bb.on('field', (name, value) => form.fields.set(name, [...(form.fields.get(name) ?? []), value]));
    bb.on('file', (name, stream, info) => {
      // A form cut short destroys the part with an error: it is the form's, reported once through `fail`.
      stream.on('error', () => undefined);
      if (name !== 'file' || form.file !== null) {
        stream.resume();
        return;
      }
      const file: UploadedFile = { name: info.filename ?? 'audio', chunks: [], bytes: 0 };
      form.file = file;
      stream.on('data', (d: Buffer) => {
        if (settled) return;
        try {
          lease.add(d.length);
        } catch (err) {
          fail(err as VoicewireError);
          return;
        }
        file.chunks.push(d);
        file.bytes += d.length;
      });
      stream.on('limit', () => fail(new VoicewireError('LIMIT_EXCEEDED', `file is over the limit of ${maxBytes} bytes`, { details: { param: 'file', status: 413 } })));
    });
    bb.on('error', (err: Error) => fail(invalidParam('file', `the multipart body could not be read: ${err.message}`)));
    bb.on('close', () => {
      if (settled) return;
      done();
      resolve(form);
    });
    req.pipe(bb);
  });
}
