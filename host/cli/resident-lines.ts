// The resident pool's framing: one JSON object a line, each way, over its Unix socket.
import type { Socket } from 'node:net';

/** Writes one message. */
export function send(socket: Socket, message: Record<string, unknown>): void {
  if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify(message)}\n`);
}

/** Reads a socket's messages one at a time; a line longer than `maxChars` characters or one that is not a JSON object ends the stream. */
export class LineReader {
  #buffered = '';
  readonly #queue: Record<string, unknown>[] = [];
  #waiting: ((message: Record<string, unknown> | undefined) => void) | undefined;
  #ended = false;
  /** Why the stream ended early, when it did. */
  error: string | undefined;
  maxChars: number;

  constructor(socket: Socket, maxChars = 1 << 16) {
    this.maxChars = maxChars;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.#take(chunk, socket));
    socket.on('error', (error) => this.#end(error.message));
    socket.on('close', () => this.#end(undefined));
  }

  /** The next message, or undefined once the stream has ended. */
  next(): Promise<Record<string, unknown> | undefined> {
    const queued = this.#queue.shift();
    if (queued !== undefined || this.#ended) return Promise.resolve(queued);
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  #take(chunk: string, socket: Socket): void {
    if (this.#ended) return;
    this.#buffered += chunk;
    let newline: number;
    while ((newline = this.#buffered.indexOf('\n')) !== -1) {
      const line = this.#buffered.slice(0, newline);
      this.#buffered = this.#buffered.slice(newline + 1);
      let message: unknown;
      try {
        message = JSON.parse(line);
      } catch {
        message = undefined;
      }
      if (typeof message !== 'object' || message === null || Array.isArray(message)) {
        socket.destroy();
        return this.#end('a line that is not a JSON object');
      }
      this.#deliver(message as Record<string, unknown>);
    }
    if (this.#buffered.length > this.maxChars) {
      socket.destroy();
      this.#end(`a line over ${this.maxChars} characters`);
    }
  }

  #deliver(message: Record<string, unknown>): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting !== undefined) waiting(message);
    else this.#queue.push(message);
  }

  #end(error: string | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    this.error ??= error;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.(undefined);
  }
}
