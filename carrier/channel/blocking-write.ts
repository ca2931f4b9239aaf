// Writes to the control channel complete before the call returns, as Node's own stdout does on a
// pipe. An asynchronous socket write only queues what the kernel does not take at once, and the
// queue is flushed by the event loop: a program printing in a loop that never yields would then
// keep every frame it sent in the carrier's memory, the host would see none of them, and the run
// would end at its deadline with the output lost instead of at its output budget. Written here, a
// full channel makes the writer wait for the host to read, which is the backpressure a flooding
// program should get; the host never stops reading for long (it pauses only to digest a burst).
//
// The socket stays non-blocking (the carrier reads it through the event loop), so a full channel
// shows up as EAGAIN: the writer sleeps a moment on an atomic wait and tries again.
import { writeSync } from 'node:fs';

const bufferFrom = Buffer.from.bind(Buffer) as typeof Buffer.from;
const byteLength = Buffer.byteLength;
const atomicsWait = Atomics.wait;
const subarray = Uint8Array.prototype.subarray as (this: Uint8Array, start?: number, end?: number) => Uint8Array;
const apply = Reflect.apply;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** How long one wait for the host to read lasts: short, since the host reads as soon as it can. */
const RETRY_MS = 0.2;

/**
 * Returns a function writing a whole text to `fd`, or calling `onBroken` with the error when the
 * other end is gone (EPIPE, ECONNRESET) or the descriptor is unusable.
 */
export function createBlockingWriter(fd: number, onBroken: (error: Error) => void): (text: string) => void {
  const writeRest = (bytes: Uint8Array): void => {
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += writeSync(fd, bytes, offset);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return onBroken(error as Error);
        atomicsWait(sleeper, 0, 0, RETRY_MS);
      }
    }
  };
  return (text) => {
    let written: number;
    try {
      // The common case: the kernel takes the whole frame in one call, encoded straight from the string.
      written = writeSync(fd, text);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return onBroken(error as Error);
      written = 0;
    }
    if (written === byteLength(text)) return;
    const bytes = bufferFrom(text, 'utf8');
    if (written < bytes.length) writeRest(apply(subarray, bytes, [written]) as Uint8Array);
  };
}
