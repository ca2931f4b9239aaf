// Reading what a child's pipe holds right now, without waiting for the event loop: before a control
// frame is handled, output a child wrote earlier is taken first so it keeps its place. Shared by
// the host's local transport and the relay, which does the same on the far side.
import { readSync } from 'node:fs';
import type { Socket } from 'node:net';

/** A function that hands `accept` whatever is waiting in `stream`'s pipe. libuv keeps pipes
 * non-blocking, so an empty pipe answers EAGAIN at once. */
export function pipeDrainer(stream: Socket): (accept: (chunk: Buffer) => void) => void {
  const buffer = Buffer.allocUnsafe(64 * 1024);
  return (accept) => {
    const fd = (stream as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) return;
    for (;;) {
      const bytes = readWaiting(fd, buffer);
      if (bytes === 0) return;
      accept(Buffer.from(buffer.subarray(0, bytes)));
    }
  };
}

/**
 * Bytes read from `fd` into `buffer`, 0 when nothing is waiting. An empty pipe is the usual case
 * (once per control frame), and readSync reports it by throwing: the error it builds is not
 * looked at, so it is built without a stack, which is most of its cost.
 */
function readWaiting(fd: number, buffer: Buffer): number {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return readSync(fd, buffer, 0, buffer.length, null);
  } catch {
    return 0; // EAGAIN: nothing waiting (or the pipe is gone)
  } finally {
    Error.stackTraceLimit = limit;
  }
}
