// The host-side network proxy for allowlists: one Unix socket that the sandbox reaches, speaking
// HTTP forward proxy, HTTP CONNECT and SOCKS5 (told apart by the first byte), every destination
// checked against the rules by the gate, and a report of what was allowed and denied.
import { createServer, type Socket } from 'node:net';
import { createGate, hostPort, systemResolve, type Resolve } from './gate.ts';
import { createHttpFront } from './http.ts';
import { describe, isCompiledRules, type CompiledRules } from './rules.ts';
import { serveSocks5 } from './socks5.ts';

export type Destination = { host: string; port: number; count: number };
export type NetworkReport = { mode: 'allowlist'; allowed: Destination[]; denied: Destination[] };

export type NetworkProxy = {
  /** The Unix socket the sandbox reaches. */
  socketPath: string;
  /** Destinations allowed and denied since the start or the last reset(), with counts, in first-seen order. */
  report(): NetworkReport;
  /** Starts counting afresh for the next run; open connections stay open. */
  reset(): void;
  /** Stops listening and destroys every connection on both sides; the socket file is removed. */
  close(): Promise<void>;
};

export type NetworkProxyOptions = {
  rules: CompiledRules;
  socketPath: string;
  /** Resolves a name to every address; @default dns.lookup with `all: true` */
  resolve?: Resolve;
  /** How long a client may take to send its first request (or SOCKS handshake); @default 30000 */
  headTimeoutMs?: number;
  /** How long connecting to a destination may take; @default 30000 */
  connectTimeoutMs?: number;
  /** Client connections open at once; more are closed on arrival, so a program cannot pile up host sockets; @default 256 */
  maxConnections?: number;
};

// Node's http server waits 60 s for headers by default; a sandboxed client that sends nothing for
// half that is broken, and its socket is better freed.
const HEAD_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 30_000;
// Browsers hold 6 connections per host and a few hundred in all; a program needs no more.
const MAX_CONNECTIONS = 256;

function checkOptions(options: NetworkProxyOptions): void {
  const fail = (message: string): never => {
    throw new TypeError(`startNetworkProxy: ${message}`);
  };
  if (typeof options !== 'object' || options === null) fail(`options must be an object, got ${describe(options)}`);
  if (!isCompiledRules(options.rules)) fail(`rules must come from parseNetworkRules(), got ${describe(options.rules)}`);
  if (typeof options.socketPath !== 'string' || options.socketPath === '') fail(`socketPath must be a non-empty path, got ${describe(options.socketPath)}`);
  if (options.resolve !== undefined && typeof options.resolve !== 'function') fail(`resolve must be a function, got ${describe(options.resolve)}`);
  for (const key of ['headTimeoutMs', 'connectTimeoutMs', 'maxConnections'] as const) {
    const value = options[key];
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) fail(`${key} must be a positive integer, got ${describe(value)}`);
  }
}

/** Listens on `socketPath`; rejects with the listen error (EADDRINUSE, a path too long) as `cause`. */
export async function startNetworkProxy(options: NetworkProxyOptions): Promise<NetworkProxy> {
  checkOptions(options);
  const headTimeoutMs = options.headTimeoutMs ?? HEAD_TIMEOUT_MS;
  const connectTimeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  let allowed = new Map<string, Destination>();
  let denied = new Map<string, Destination>();
  const record = (outcome: 'allowed' | 'denied', host: string, port: number): void => {
    const counts = outcome === 'allowed' ? allowed : denied;
    const key = hostPort(host, port);
    const entry = counts.get(key);
    if (entry === undefined) counts.set(key, { host, port, count: 1 });
    else entry.count++;
  };
  const sockets = new Set<Socket>();
  let closed = false;
  // A connection opened after close() (a lookup that finished late) is ended at once.
  const track = (socket: Socket): void => {
    if (closed) return void socket.destroy();
    if (sockets.has(socket)) return;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const gate = createGate(options.rules, options.resolve ?? systemResolve, record);
  const http = createHttpFront(gate, { connectTimeoutMs, track });

  // Half-open stays open so a client that shuts down its sending side still gets the whole answer.
  const listener = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) => {
    track(socket);
    socket.on('error', () => socket.destroy());
    socket.on('timeout', () => socket.destroy());
    socket.setTimeout(headTimeoutMs);
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      if (first[0] === 0x05) serveSocks5(socket, gate, { connectTimeoutMs, headTimeoutMs, track });
      else if (first[0] === 0x04) socket.end(Buffer.from([0x00, 0x5b, 0, 0, 0, 0, 0, 0])); // SOCKS4: "rejected"; only SOCKS5 is spoken
      else http.server.emit('connection', socket);
      socket.resume();
    });
    socket.resume();
  });

  listener.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    listener.once('error', (error) => reject(new Error(`ptc network proxy: cannot listen on ${options.socketPath}: ${error.message}`, { cause: error })));
    listener.listen(options.socketPath, () => resolve());
  });
  // After listening, errors come from accept() (EMFILE, ENFILE): that connection is lost, the
  // listener goes on, and an unhandled 'error' would otherwise take the host down.
  listener.on('error', () => {});
  // The carrier it serves keeps the host alive while a run needs the proxy (its process and pipes,
  // and each open connection here); an idle listener must not, or a host that never disposes an
  // allowlisted spare or retained environment would never exit.
  listener.unref();

  let closing: Promise<void> | undefined;
  return {
    socketPath: options.socketPath,
    report: () => ({ mode: 'allowlist', allowed: [...allowed.values()].map((entry) => ({ ...entry })), denied: [...denied.values()].map((entry) => ({ ...entry })) }),
    reset() {
      allowed = new Map();
      denied = new Map();
    },
    close() {
      closed = true;
      closing ??= new Promise<void>((resolve) => {
        listener.close(() => resolve());
        http.close();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
