// `ptc serve`: the runtime behind JSON-RPC 2.0 over stdio, for agent harnesses in any language.
import type { Readable, Writable } from 'node:stream';
import type { RuntimeConfig } from '../index.ts';
import { Connection } from './connection.ts';
import { Server } from './server.ts';

export { SERVE_PROTOCOL_VERSION, METHODS } from './server.ts';

export interface ServeOptions {
  input: Readable;
  output: Writable;
  /** The runtime configuration; `initialize` may add to it before the first run. */
  config?: RuntimeConfig;
  /** Where diagnostics go (never the output stream). @default a line on stderr */
  log?: (line: string) => void;
}

/**
 * Serves one client until its input ends or it sends `shutdown`; then aborts every run, ends every
 * carrier and resolves once the last reply is written.
 */
export async function serve({ input, output, config = {}, log = (line) => process.stderr.write(`ptc serve: ${line}\n`) }: ServeOptions): Promise<void> {
  const server = new Server(config, log);
  const connection = new Connection(output, {
    handle: (method, params) => server.handle(method, params),
    maxLineBytes: () => server.maxLineBytes(),
    log,
  });
  server.attach(connection);
  await connection.serve(input, server.stopped);
  await server.close();
  await connection.drain();
}
