// The server's framing: one JSON message per line (MCP's stdio framing). Unlike the carrier's
// reader, an oversized line is not the end of the connection: the client is a program we serve,
// not an untrusted peer, so the line is skipped (never buffered) and reading goes on after it.

export interface LineSplitter {
  push(chunk: Uint8Array): void;
  /** Delivers a last line that had no newline before the end of input. */
  end(): void;
}

export interface LineSplitterOptions {
  /** Read on every chunk, so a limit changed by `initialize` applies from the next line. */
  maxLineBytes(): number;
  onLine(line: string): void;
  /** A line over the limit was skipped; `bytes` is how long it was. */
  onOversized(bytes: number, limit: number): void;
}

/** Splits a byte stream into UTF-8 lines and skips any line longer than the limit without keeping it. */
export function createLineSplitter({ maxLineBytes, onLine, onOversized }: LineSplitterOptions): LineSplitter {
  const decoder = new TextDecoder('utf-8');
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  // While skipping an oversized line: how many bytes it has had so far, and the limit it broke.
  let skipping: { bytes: number; limit: number } | undefined;

  const finish = (bytes: Uint8Array): void => {
    const text = decoder.decode(bytes).replace(/\r$/, '');
    if (text.trim() !== '') onLine(text);
  };

  return {
    push(chunk) {
      let start = 0;
      while (start <= chunk.length) {
        const newline = chunk.indexOf(10, start);
        const end = newline === -1 ? chunk.length : newline;
        const size = end - start;
        if (skipping !== undefined) {
          skipping.bytes += size;
        } else if (pendingBytes + size > maxLineBytes()) {
          skipping = { bytes: pendingBytes + size, limit: maxLineBytes() };
          pending = [];
          pendingBytes = 0;
        } else if (newline === -1) {
          if (size > 0) {
            pending.push(chunk.slice(start));
            pendingBytes += size;
          }
        } else {
          const line = chunk.subarray(start, end);
          const whole = pending.length === 0 ? line : Buffer.concat([...pending, line], pendingBytes + size);
          pending = [];
          pendingBytes = 0;
          finish(whole);
        }
        if (newline === -1) return;
        if (skipping !== undefined) {
          const { bytes, limit } = skipping;
          skipping = undefined;
          onOversized(bytes, limit);
        }
        start = newline + 1;
      }
    },
    end() {
      if (skipping !== undefined) onOversized(skipping.bytes, skipping.limit);
      else if (pendingBytes > 0) finish(Buffer.concat(pending, pendingBytes));
      skipping = undefined;
      pending = [];
      pendingBytes = 0;
    },
  };
}
