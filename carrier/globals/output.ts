// Everything the program shows goes through one ordered sink: inspect(), the native console and
// raw process.stdout/stderr writes. The host meters the bytes; the carrier only stops sending
// once the run's budget is spent, so a runaway loop cannot flood the control channel.
import { inspect as utilInspect, types } from 'node:util';
import { StringDecoder } from 'node:string_decoder';
import { collectInspectedImages, imageDescriptor } from './image.ts';
import { apply, bufferFrom, byteLength, defineProperty, nextTick, stringCharCodeAt, stringSlice } from '../hardening/intrinsics.ts';
import type { OutputMessage } from '../../wire/messages.ts';

export interface OutputSink {
  (entry: OutputMessage): void;
}

// Works across realms: a vm-script program's Uint8Array is not an instance of this realm's.
const isUint8Array = types.isUint8Array as (value: unknown) => value is Uint8Array;
const inspectOptions = {
  __proto__: null,
  depth: Infinity,
  maxArrayLength: Infinity,
  maxStringLength: Infinity,
  breakLength: 100,
} as const;

const { max, min, floor } = Math;
const decoderWrite = StringDecoder.prototype.write;
/** Bytes of an output frame around its text: `{"t":"q","m":"output","a":[{"type":"text","text":""}]}` and slack. */
const FRAME_OVERHEAD = 256;

let sink: OutputSink | undefined;
/** Whether the code printing right now belongs to the run that owns the sink. */
let current: () => boolean = () => false;
let remaining = 0;
let maxChunkUnits = Infinity;

/**
 * Directs output to `send` until the run's budget (plus one entry to show the overflow) is spent.
 * Text is sent in pieces that fit one control frame, since the host refuses larger frames.
 */
export function beginOutput(send: OutputSink, maxOutputBytes: number, maxMessageBytes: number, isCurrent: () => boolean): void {
  remaining = maxOutputBytes;
  current = isCurrent;
  // JSON escaping turns one UTF-16 unit into at most 6 bytes (\u001f).
  maxChunkUnits = max(1, floor((maxMessageBytes - FRAME_OVERHEAD) / 6));
  sink = send;
}

/** Drops all later output: the run has settled. */
export function endOutput(): void {
  sink = undefined;
}

function emit(entry: OutputMessage): void {
  if (sink === undefined || remaining < 0 || !current()) return;
  if (entry.type !== 'text') {
    remaining -= 64;
    sink(entry);
    return;
  }
  // Every unit is at least one byte, so remaining + 1 units are enough for the host to see the
  // overflow; the rest is never sent.
  const text = entry.text;
  const stream = entry.stream;
  const end = cutPoint(text, remaining + 1);
  for (let start = 0; start < end && sink !== undefined; ) {
    const stop = cutPoint(text, min(end, start + maxChunkUnits));
    const piece = stringSlice(text, start, stop);
    remaining -= byteLength(piece);
    sink(stream === undefined ? { type: 'text', text: piece } : { type: 'text', text: piece, stream });
    start = stop;
  }
}

/** `index`, moved one unit on when it would split a surrogate pair. */
function cutPoint(text: string, index: number): number {
  if (index >= text.length) return text.length;
  const unit = stringCharCodeAt(text, index - 1);
  return unit >= 0xd800 && unit <= 0xdbff ? index + 1 : index;
}

/** Displays values: strings as they are, Images as attachments, anything else via util.inspect. */
export function inspect(...values: unknown[]): void {
  // One group of text per run of non-image arguments, built by concatenation (no Array methods).
  let group = '';
  let grouped = false;
  const flush = (): void => {
    if (!grouped) return;
    emit({ type: 'text', text: `${group}\n` });
    group = '';
    grouped = false;
  };
  const add = (text: string): void => {
    group = grouped ? `${group} ${text}` : text;
    grouped = true;
  };
  for (let index = 0; index < values.length; index++) {
    const value = values[index];
    if (typeof value === 'string') {
      add(value);
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
    add(formatted.result);
    const { images } = formatted;
    if (images.length > 0) {
      flush();
      for (let at = 0; at < images.length; at++) emit({ type: 'image', attachmentId: images[at]!.attachmentId });
    }
  }
  flush();
}

/** Replaces process.stdout.write and process.stderr.write so the native console is captured in order, each write marked with its stream. */
export function captureStandardStreams(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const toStderr = stream === process.stderr;
    const decoder = new StringDecoder('utf8');
    const write = function (chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
      const done = typeof encoding === 'function' ? encoding : callback;
      let text: string;
      if (typeof chunk === 'string') {
        text = typeof encoding === 'string' && encoding !== 'utf8' && encoding !== 'utf-8'
          ? apply(decoderWrite, decoder, [bufferFrom(chunk, encoding as BufferEncoding)]) as string
          : chunk;
      } else if (isUint8Array(chunk)) {
        text = apply(decoderWrite, decoder, [bufferFrom(chunk.buffer, chunk.byteOffset, chunk.byteLength)]) as string;
      } else {
        throw new TypeError(`The "chunk" argument must be a string or Uint8Array, got ${utilInspect(chunk)}`);
      }
      if (text !== '') emit(toStderr ? { type: 'text', text, stream: 'stderr' } : { type: 'text', text });
      if (typeof done === 'function') nextTick(done as () => void);
      return true;
    };
    defineProperty(stream, 'write', { __proto__: null, value: write, writable: true, configurable: true } as PropertyDescriptor);
  }
}
