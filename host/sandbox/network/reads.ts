// Reads of a connection the proxy opened land in a buffer of its own (net's `onread`) and go
// straight to whoever consumes them: no stream push and pipe per chunk, and no new buffer per read
// while the consumer's writes leave for the kernel at once, which is the usual case on a local
// socket. Profiling the 1 MB forward showed the stream path and the garbage of its chunks as most of
// the proxy's own CPU. A buffer still queued in a write is left to it and the next read gets a fresh one.
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';

/** Node's own read size for sockets: a larger one measured no faster, and this bounds memory per connection. */
export const READ_BYTES = 64 * 1024;

/**
 * Takes one read, valid only during the call. Returns the stream the bytes (or part of them) were
 * written to, so its backlog and backpressure are watched, or undefined when it kept none of them.
 */
export type Consumer = (chunk: Buffer) => Writable | undefined;

export type Reads = {
  /** The `onread` option for net.connect. */
  onread: { buffer: () => Buffer; callback: (bytes: number, buffer: Buffer) => boolean };
  /** Sends the next reads to `consumer`, after any that came before it had one. */
  consume(consumer: Consumer): void;
  /** The socket made with `onread`, which reading resumes on after backpressure. */
  attach(socket: Socket): void;
};

/** Reads for one socket; until consume() is called they are kept (a server may speak first). */
export function createReads(): Reads {
  let buffer = Buffer.allocUnsafe(READ_BYTES);
  const early: Buffer[] = [];
  let consumer: Consumer = (chunk) => void early.push(Buffer.from(chunk));
  let socket: Socket | undefined;
  const resume = (): void => void socket?.resume();
  return {
    onread: {
      buffer: () => buffer,
      callback(bytes, filled) {
        const sink = consumer(filled.subarray(0, bytes));
        if (sink === undefined) return true;
        if (sink.writableLength > 0) buffer = Buffer.allocUnsafe(READ_BYTES);
        if (!sink.writableNeedDrain) return true;
        // Stop reading until the consumer's side has taken what it was given: pipe()'s backpressure.
        sink.once('drain', resume);
        return false;
      },
    },
    consume(next) {
      consumer = next;
      for (const chunk of early.splice(0)) next(chunk);
    },
    attach(next) {
      socket = next;
    },
  };
}

/** Writes `reads` to `sink` as they come. */
export function pipeReads(reads: Reads, sink: Writable): void {
  reads.consume((chunk) => {
    sink.write(chunk);
    return sink;
  });
}
