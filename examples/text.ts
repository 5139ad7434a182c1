// Tags, the text chunker and an NDJSON response: `npx tsx examples/text.ts`.
import { createServer } from 'node:http';
import { createTagParser, createTextChunker, ndjsonEvents } from 'voicewire';

const tags = createTagParser();
console.log(tags.push('Bonjour <br'));              // [{ type: 'text', text: 'Bonjour ' }]
console.log(tags.push('eak time="0.5s" />à tous')); // [{ type: 'break', seconds: 0.5 }, { type: 'text', text: ' à tous' }]
console.log(tags.flush());                          // [] (end of input: nothing was held back)

const chunker = createTextChunker();                // LLM tokens in, TTS `text` messages out
console.log(chunker.push('Hello wor'));             // ['Hello']
console.log(chunker.push('ld! <flush> How'));       // ['world! <flush>']
console.log(chunker.end());                         // ['How']

// The STT HTTP stream: one JSON event per line, split anywhere by the network.
const server = createServer((_req, res) => {
  res.write('{"type":"text","text":"hel');
  res.end('lo","start_s":0.5}\n{"type":"end_text","stop_s":0.9}\n');
}).listen(0, '127.0.0.1');
await new Promise((ok) => server.once('listening', ok));
const { port } = server.address() as { port: number };
for await (const ev of ndjsonEvents(await fetch(`http://127.0.0.1:${port}/`))) console.log(ev);
server.close();
