// The stdio transport to one upstream: the SDK's, with its messages parsed and written losslessly
// (an integer past 2^53 reaches the program as a bigint, and a bigint the program sends goes out
// as its exact digits, as everywhere else in ptc) and with what a dying server leaves behind
// (exit status, the tail of its stderr) kept for the report.
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChildProcess } from 'node:child_process';
import { decodeJson } from '../../wire/decode.ts';
import { encodeJson } from '../../wire/json.ts';
import type { UpstreamConfig } from './config.ts';

/** Stderr kept per upstream for the report of its death: enough for a stack trace's head. */
const STDERR_TAIL_BYTES = 2048;

/** The SDK's line buffer with V8's JSON.parse swapped for ptc's lossless decoder. */
class LosslessReadBuffer extends ReadBuffer {
  #buffer: Buffer | undefined;

  override append(chunk: Buffer): void {
    if ((this.#buffer?.length ?? 0) + chunk.length > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
      this.clear();
      throw new Error(`a message from the upstream passed ${STDIO_DEFAULT_MAX_BUFFER_SIZE} bytes`);
    }
    this.#buffer = this.#buffer === undefined ? chunk : Buffer.concat([this.#buffer, chunk]);
  }

  override readMessage(): JSONRPCMessage | null {
    if (this.#buffer === undefined) return null;
    const index = this.#buffer.indexOf('\n');
    if (index === -1) return null;
    const line = this.#buffer.toString('utf8', 0, index).replace(/\r$/, '');
    this.#buffer = this.#buffer.subarray(index + 1);
    return JSONRPCMessageSchema.parse(decodeJson(line));
  }

  override clear(): void {
    this.#buffer = undefined;
  }
}

export interface StdioUpstream {
  transport: StdioClientTransport;
  /** "exited with code 3" or "was killed by SIGKILL", plus its last stderr; undefined while it runs. */
  death(): string | undefined;
}

/** A transport that spawns the upstream's command; its stderr still reaches ptc's stderr. */
export function stdioUpstream(config: Extract<UpstreamConfig, { kind: 'stdio' }>): StdioUpstream {
  const transport = new StdioClientTransport({
    command: config.command,
    args: config.args,
    ...(config.env ? { env: config.env } : {}),
    ...(config.cwd ? { cwd: config.cwd } : {}),
    stderr: 'pipe',
  });
  // The SDK keeps the buffer and the child in private fields and offers no hook for either.
  const internals = transport as unknown as { _readBuffer: ReadBuffer; _process?: ChildProcess };
  internals._readBuffer = new LosslessReadBuffer();
  // The SDK writes JSON.stringify's text, which throws on a bigint; ptc's encoder writes its digits.
  transport.send = (message) => new Promise((resolve, reject) => {
    const stdin = internals._process?.stdin;
    if (!stdin) return reject(new Error('Not connected'));
    if (stdin.write(`${encodeJson(message, 'message')}\n`)) resolve();
    else stdin.once('drain', resolve);
  });
  let tail = Buffer.alloc(0);
  transport.stderr!.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    tail = Buffer.concat([tail, chunk]);
    if (tail.length > STDERR_TAIL_BYTES) tail = tail.subarray(tail.length - STDERR_TAIL_BYTES);
  });
  let status: string | undefined;
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    internals._process?.once('exit', (code, signal) => {
      status = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
    });
  };
  return {
    transport,
    death() {
      if (status === undefined) return undefined;
      const text = tail.toString('utf8').trim();
      return text === '' ? `${status} (no stderr)` : `${status}; its stderr ended: ${JSON.stringify(text.slice(-500))}`;
    },
  };
}
