// Newline-delimited frames with a hard per-line byte limit: how the carrier reads the host's
// frames (the host reads the carrier's in host/worker/control.ts, which also authenticates them).
// A line over the limit is reported once and everything after it is ignored: the peer is broken
// or hostile and the connection is about to be torn down.

export interface LineReader {
  push(chunk: Uint8Array): void;
}

export interface LineReaderOptions {
  maxLineBytes: number;
  /** One line without its newline, as bytes: the reader does not decode, so a receiver can check a frame's bytes. */
  onLine(line: Uint8Array): void;
  onOverflow(bytes: number): void;
}

/** Splits a byte stream into lines, refusing any line longer than `maxLineBytes`. */
export function createLineReader({ maxLineBytes, onLine, onOverflow }: LineReaderOptions): LineReader {
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let failed = false;

  return {
    push(chunk) {
      if (failed) return;
      let start = 0;
      for (;;) {
        const newline = chunk.indexOf(10, start);
        const end = newline === -1 ? chunk.length : newline;
        const size = end - start;
        if (pendingBytes + size > maxLineBytes) {
          failed = true;
          pending = [];
          onOverflow(pendingBytes + size);
          return;
        }
        if (newline === -1) {
          if (size > 0) {
            pending.push(chunk.subarray(start));
            pendingBytes += size;
          }
          return;
        }
        let bytes = chunk.subarray(start, end);
        if (pending.length > 0) {
          pending.push(bytes);
          bytes = concat(pending, pendingBytes + size);
          pending = [];
          pendingBytes = 0;
        }
        start = newline + 1;
        if (bytes.length > 0) onLine(bytes);
        if (failed) return;
      }
    },
  };
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
