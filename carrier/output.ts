// Everything the program shows goes through one ordered sink: inspect(), the native console and
// raw process.stdout/stderr writes. The host meters the bytes; the carrier only stops sending
// once the run's budget is spent, so a runaway loop cannot flood the control channel.
import { inspect as utilInspect } from 'node:util';
import { StringDecoder } from 'node:string_decoder';
import { collectInspectedImages, imageDescriptor } from './image.ts';
import type { OutputMessage } from './protocol/messages.ts';

export interface OutputSink {
  (entry: OutputMessage): void;
}

const byteLength = Buffer.byteLength;
const inspectOptions = {
  depth: Infinity,
  maxArrayLength: Infinity,
  maxStringLength: Infinity,
  breakLength: 100,
} as const;

let sink: OutputSink | undefined;
let remaining = 0;

/** Directs output to `send` until the run's budget (plus one entry to show the overflow) is spent. */
export function beginOutput(send: OutputSink, maxOutputBytes: number): void {
  remaining = maxOutputBytes;
  sink = send;
}

/** Drops all later output: the run has settled. */
export function endOutput(): void {
  sink = undefined;
}

function emit(entry: OutputMessage): void {
  if (sink === undefined || remaining < 0) return;
  remaining -= entry.type === 'text' ? byteLength(entry.text) : 64;
  sink(entry);
}

/** Displays values: strings as they are, Images as attachments, anything else via util.inspect. */
export function inspect(...values: unknown[]): void {
  let group: string[] = [];
  const flush = (): void => {
    if (group.length === 0) return;
    emit({ type: 'text', text: `${group.join(' ')}\n` });
    group = [];
  };
  for (const value of values) {
    if (typeof value === 'string') {
      group.push(value);
      continue;
    }
    const direct = imageDescriptor(value);
    if (direct !== undefined) {
      flush();
      emit({ type: 'image', attachmentId: direct.attachmentId });
      continue;
    }
    let formatted: { result: string; images: { attachmentId: string }[] };
    try {
      formatted = collectInspectedImages(() => utilInspect(value, inspectOptions));
    } catch (error) {
      flush();
      throw error;
    }
    group.push(formatted.result);
    if (formatted.images.length > 0) {
      flush();
      for (const image of formatted.images) emit({ type: 'image', attachmentId: image.attachmentId });
    }
  }
  flush();
}

/** Replaces process.stdout.write and process.stderr.write so the native console is captured in order. */
export function captureStandardStreams(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const decoder = new StringDecoder('utf8');
    const write = function (chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
      const done = typeof encoding === 'function' ? encoding : callback;
      let text: string;
      if (typeof chunk === 'string') {
        text = typeof encoding === 'string' && encoding !== 'utf8' && encoding !== 'utf-8'
          ? decoder.write(Buffer.from(chunk, encoding as BufferEncoding))
          : chunk;
      } else if (chunk instanceof Uint8Array) {
        text = decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      } else {
        throw new TypeError(`The "chunk" argument must be a string or Uint8Array, got ${utilInspect(chunk)}`);
      }
      if (text !== '') emit({ type: 'text', text });
      if (typeof done === 'function') process.nextTick(done as () => void);
      return true;
    };
    Object.defineProperty(stream, 'write', { value: write, writable: true, configurable: true });
  }
}
