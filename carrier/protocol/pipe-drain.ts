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
      let bytes: number;
      try {
        bytes = readSync(fd, buffer, 0, buffer.length, null);
      } catch {
        return; // EAGAIN: nothing waiting (or the pipe is gone)
      }
      if (bytes === 0) return;
      accept(Buffer.from(buffer.subarray(0, bytes)));
    }
  };
}
