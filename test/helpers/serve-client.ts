// A small JSON-RPC client of one `ptc serve` process for suites beyond serve.test.ts: requests,
// replies, notifications as they come, and the server's invoke requests answered by a handler.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { decodeJson } from '../../wire/decode.ts';
import { repoRoot } from './runtime.ts';

export type Message = Record<string, any>;

export class ServeClient {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  /** Answers each invoke request; by default every tool echoes its arguments. */
  onInvoke: (message: Message) => void = (message) => this.send({ jsonrpc: '2.0', id: message.id, result: message.params.args });
  onNotification: (message: Message) => void = () => {};
  readonly #replies = new Map<unknown, (message: Message) => void>();
  readonly #exited: Promise<number | null>;
  #nextId = 0;
  #pending = '';

  constructor(file: string, args: string[], env: Record<string, string> = {}) {
    // The run's state directory (test/run.ts) goes along: a journal's row key lives there.
    const state = process.env.XDG_STATE_HOME === undefined ? {} : { XDG_STATE_HOME: process.env.XDG_STATE_HOME };
    this.child = spawn(file, args, { cwd: repoRoot, env: { PATH: '/usr/bin:/bin', ...state, ...env } });
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.#pending += chunk;
      let newline: number;
      while ((newline = this.#pending.indexOf('\n')) !== -1) {
        const line = this.#pending.slice(0, newline);
        this.#pending = this.#pending.slice(newline + 1);
        const message = decodeJson(line) as Message;
        if (message.method === 'invoke') this.onInvoke(message);
        else if ('method' in message) this.onNotification(message);
        else {
          this.#replies.get(message.id)?.(message);
          this.#replies.delete(message.id);
        }
      }
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.#exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  send(message: Message): void {
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  request(method: string, params?: unknown): Promise<Message> {
    const id = ++this.#nextId;
    const reply = new Promise<Message>((resolve) => this.#replies.set(id, resolve));
    this.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
    return reply;
  }

  async close(): Promise<number | null> {
    this.child.stdin.end();
    return this.#exited;
  }
}
