// One JSON-RPC peer over a pair of streams: replies to the client's requests, sends its own
// requests (`invoke`) and notifications (`output`), and matches the client's replies to them.
// Every line is answered or dropped on its own: a bad line never ends the connection.
import type { Readable, Writable } from 'node:stream';
import { createLineSplitter } from './lines.ts';
import { decodeMessage, encodeMessage, ErrorCode, preview, RpcError, type Id, type Incoming } from './wire.ts';

export interface ConnectionHandlers {
  /** Answers a request or notification; a thrown RpcError becomes the error reply. */
  handle(method: string, params: Record<string, unknown>): Promise<unknown>;
  maxLineBytes(): number;
  log(line: string): void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class Connection {
  readonly #output: Writable;
  readonly #handlers: ConnectionHandlers;
  readonly #pending = new Map<number, Pending>();
  /** Requests of the client not answered yet, so closing can wait for their replies. */
  readonly #inFlight = new Set<Promise<void>>();
  #nextId = 0;
  #writable = true;

  constructor(output: Writable, handlers: ConnectionHandlers) {
    this.#output = output;
    this.#handlers = handlers;
    // A client that closed its end of our stdout is gone: stop writing, keep cleaning up.
    output.on('error', (error) => {
      if (this.#writable) handlers.log(`cannot write to the client (${error.message}); replies are dropped from now on`);
      this.#writable = false;
    });
  }

  /** Reads messages until the input ends; resolves once every request read has been answered. */
  async serve(input: Readable, stopped: Promise<void>): Promise<void> {
    const splitter = createLineSplitter({
      maxLineBytes: () => this.#handlers.maxLineBytes(),
      onLine: (line) => this.#receive(line),
      onOversized: (bytes, limit) => this.#reply(null, new RpcError(ErrorCode.invalidRequest, `a message of ${bytes} bytes is over the limit of ${limit} bytes (maxMessageBytes); it was skipped`)),
    });
    const ended = new Promise<void>((resolve) => {
      input.on('data', (chunk: Buffer) => splitter.push(chunk));
      input.once('end', () => {
        splitter.end();
        resolve();
      });
      input.once('close', resolve);
      input.once('error', (error) => {
        this.#handlers.log(`cannot read from the client: ${error.message}`);
        resolve();
      });
    });
    await Promise.race([ended, stopped]);
    input.pause();
  }

  /** Waits for the replies of every request read so far to be written. */
  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  notify(method: string, params: object): void {
    this.#send({ jsonrpc: '2.0', method, params });
  }

  /** Sends a request to the client; `reply` settles with its answer, or rejects with its error as an RpcError. */
  request(method: string, params: object): { id: number; reply: Promise<unknown> } {
    const id = ++this.#nextId;
    const reply = new Promise<unknown>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    this.#send({ jsonrpc: '2.0', id, method, params });
    return { id, reply };
  }

  /** Gives up on a request to the client: a later reply to it is dropped. */
  forget(id: number, reason: Error): void {
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    pending?.reject(reason);
  }

  #receive(line: string): void {
    let message: Incoming;
    try {
      message = decodeMessage(line);
    } catch (error) {
      const rpc = error instanceof RpcError ? error : new RpcError(ErrorCode.parse, String(error));
      const pending = rpc.response && typeof rpc.id === 'number' ? this.#pending.get(rpc.id) : undefined;
      if (pending !== undefined) {
        // The client's reply to one of our requests cannot be read: that request fails now, with
        // the reason, and a reply gets no reply of its own (JSON-RPC 2.0, section 5).
        this.#pending.delete(rpc.id as number);
        this.#handlers.log(`the reply to request ${rpc.id} could not be read (${rpc.message}); that call failed`);
        pending.reject(new RpcError(rpc.code, `the client's reply could not be read: ${rpc.message}`, { code: 'PTC_INVALID_REPLY' }));
        return;
      }
      this.#reply(rpc.id, rpc);
      return;
    }
    if (message.kind === 'response') return this.#settle(message);
    const { method, params } = message;
    const task = this.#handlers.handle(method, params).then(
      (result) => {
        if (message.kind === 'request') this.#reply(message.id, undefined, result);
      },
      (error: unknown) => {
        const rpc = error instanceof RpcError ? error : new RpcError(ErrorCode.internal, `${method}: ${(error as Error)?.message ?? String(error)}`, undefined, { cause: error });
        if (message.kind === 'request') this.#reply(message.id, rpc);
        else this.#handlers.log(`notification ${method} failed: ${rpc.message}`);
      },
    );
    this.#inFlight.add(task);
    void task.finally(() => this.#inFlight.delete(task));
  }

  #settle(message: Extract<Incoming, { kind: 'response' }>): void {
    const pending = typeof message.id === 'number' ? this.#pending.get(message.id) : undefined;
    if (pending === undefined) {
      this.#handlers.log(`dropped a reply to ${message.id === null ? 'no request' : `request ${String(message.id)}`}: it is unknown or already finished`);
      return;
    }
    this.#pending.delete(message.id as number);
    if (message.error !== undefined) pending.reject(new RpcError(message.error.code, message.error.message, message.error.data));
    else pending.resolve(message.result);
  }

  #reply(id: Id, error: RpcError | undefined, result?: unknown): void {
    if (error !== undefined) {
      this.#send({ jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data !== undefined ? { data: error.data } : {}) } });
    } else {
      this.#send({ jsonrpc: '2.0', id, result: result ?? null });
    }
  }

  #send(message: object): void {
    if (!this.#writable) return;
    let text: string;
    try {
      text = encodeMessage(message);
    } catch (error) {
      this.#handlers.log(`cannot encode a message (${(error as Error).message}): ${preview(String(message))}`);
      return;
    }
    this.#output.write(text);
  }
}
