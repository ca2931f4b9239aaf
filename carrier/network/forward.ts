// The in-sandbox end of a network allowlist. Under bubblewrap the carrier's network namespace has
// only loopback; the host's proxy (host/sandbox/network/) listens on a Unix socket bound into the
// sandbox. Before any program runs, this listens on 127.0.0.1:FORWARD_PORT and pipes every
// connection, byte for byte, to that socket: the proxy sees what the client sent (an HTTP request,
// CONNECT, or a SOCKS5 greeting) and decides. Nothing here decides anything, so a program that
// tampers with it can only break its own network.
//
// A denial must reach the program as a failure it can act on. The proxy answers a denied request
// with 403 and the reason in an `x-ptc-network` header; fetch would resolve with that response
// (plain HTTP) or reject with undici's generic "Proxy response (403) !== 200" (CONNECT). So the
// forwarder notes the reasons it passes back for refused CONNECTs, by the destination the client
// asked for, and the program's fetch rejects with the proxy's own sentence instead. The same goes
// for the proxy's 502 (a name that does not resolve, a host that does not answer). http/https and
// curl see the status and the reason in the body.
import { connect, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { explainUnreachable } from '../hardening/denials.ts';
import { FORWARD_CONNECTION } from './byte-path.ts';
import { FORWARD_PORT } from '../../wire/network.ts';
import { apply, NativePromise, resolved, SafeMap, stringIncludes, stringStartsWith, then, TypeErrorCtor } from '../hardening/intrinsics.ts';

const DENIAL_PREFIX = 'blocked by ptc network policy: ';
/** A direct connection (net.connect, a UDP socket) finds no route: the namespace has only loopback. */
const UNREACHABLE_HINT = ` (ptc network policy: the sandbox has no network interface, only the allowlist proxy; use fetch, http(s) with HTTP_PROXY, or SOCKS5 at ALL_PROXY=socks5h://127.0.0.1:${FORWARD_PORT})`;

// The forwarder runs on a thread of its own: a program that blocks the carrier's event loop in
// execSync('curl …') must not also block the proxy path curl is waiting on. It is plain JavaScript
// evaluated by the Worker (no file to find in the bundle or the single executable). The reason of
// a denied request is posted to the carrier before its bytes are passed on, so it is already
// queued when fetch sees the refusal.
const FORWARDER = `
const { connect, createServer } = require('node:net');
const { parentPort, workerData } = require('node:worker_threads');
const { socketPath, port, reasons } = workerData;
const HEADER = '\\r\\nx-ptc-network: ';
${FORWARD_CONNECTION}
const server = createServer({ noDelay: true }, (client) => {
  let authority;
  client.once('data', (chunk) => {
    const line = /^CONNECT (\\S+) HTTP\\//.exec(chunk.toString('latin1', 0, 1024));
    if (line !== null) authority = line[1].toLowerCase();
  });
  forwardConnection(client, socketPath, (chunk) => {
    if (authority === undefined) return;
    const head = chunk.toString('latin1', 0, 2048);
    if (head.startsWith('HTTP/1.1 200')) return;
    const at = head.indexOf(HEADER);
    if (at === -1) return;
    const stop = head.indexOf('\\r\\n', at + HEADER.length);
    reasons.postMessage([authority, head.slice(at + HEADER.length, stop === -1 ? undefined : stop)]);
  });
});
server.once('error', (error) => parentPort.postMessage({ error: error.message }));
server.listen(port, '127.0.0.1', () => parentPort.postMessage({ listening: true }));
`;

/** The proxy's reasons for refused CONNECTs by "host:port", as the client wrote it; newest wins. */
const refusals = new SafeMap<string, string>();
let reasons: MessagePort | undefined;

/** Starts the forwarder to the proxy's socket (carrier.ts reads NETWORK_SOCKET_ENV). The promise
 * settles once the forwarder listens and rejects when it cannot. */
export function startForwarding(socketPath: string): Promise<void> {
  const nativeFetch = globalThis.fetch;
  guardFetch();
  explainUnreachable(UNREACHABLE_HINT);
  const { port1, port2 } = new MessageChannel();
  reasons = port1;
  const listening = new NativePromise<void>((resolve, reject) => {
    const fail = (message: string, cause?: unknown): void => {
      reject(new Error(`the network forwarder could not listen on 127.0.0.1:${FORWARD_PORT}: ${message}`, { cause }));
    };
    const worker = new Worker(FORWARDER, { eval: true, workerData: { socketPath, port: FORWARD_PORT, reasons: port2 }, transferList: [port2] });
    // Ref'd until it answers, so a run waiting for it is not taken for one that nothing can
    // settle; then the control channel keeps the carrier alive, not this.
    worker.once('message', (message: { listening?: true; error?: string }) => {
      worker.unref();
      if (message.listening) resolve();
      else fail(message.error ?? 'unknown error');
    });
    worker.once('error', (error: Error) => {
      worker.unref();
      fail(error.message, error);
    });
  });
  return then(listening, () => tunnelOldFetch(nativeFetch));
}

/** The undici global dispatcher slot, which Node's fetch reads on every call. */
const DISPATCHER = Symbol.for('undici.globalDispatcher.1');

/**
 * Node before 24 ignores NODE_USE_ENV_PROXY: its fetch would go straight at the empty namespace.
 * There, fetch gets a dispatcher of its own undici Agent class whose connector opens a CONNECT
 * tunnel through the forwarder for every connection (http and https alike), so fetch behaves as
 * on the pinned Node. (Its http/https modules still ignore the proxy; curl does not.)
 */
function tunnelOldFetch(nativeFetch: typeof fetch): Promise<void> {
  if (Number(process.versions.node.split('.')[0]) >= 24 || typeof nativeFetch !== 'function') return resolved(undefined);
  // The first fetch loads undici, which puts its Agent in the slot; a data: URL touches no network.
  return then(
    nativeFetch('data:,'),
    () => {
      const slot = globalThis as unknown as Record<symbol, object | undefined>;
      const Agent = slot[DISPATCHER]?.constructor as (new (options: object) => object) | undefined;
      if (typeof Agent === 'function') slot[DISPATCHER] = new Agent({ connect: connectThroughProxy });
    },
    () => {},
  );
}

interface ConnectOptions {
  hostname: string;
  protocol: string;
  port: string | number;
  servername?: string;
}

const MAX_PROXY_HEAD = 16 * 1024;

/** undici's connector: a CONNECT tunnel to the destination through the forwarder, TLS on top for https. */
function connectThroughProxy(options: ConnectOptions, callback: (error: Error | null, socket: Socket | null) => void): void {
  const target = `${options.hostname}:${options.port || (options.protocol === 'https:' ? 443 : 80)}`;
  const socket = connect(FORWARD_PORT, '127.0.0.1');
  let answered = false;
  const answer = (error: Error | null, result: Socket | null): void => {
    if (answered) return;
    answered = true;
    callback(error, result);
  };
  socket.setNoDelay(true);
  socket.once('error', (error) => answer(error, null));
  socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) {
      if (head.length > MAX_PROXY_HEAD) answer(new Error(`the network proxy sent an oversized answer to CONNECT ${target}`), null);
      return;
    }
    socket.off('data', onData);
    socket.pause();
    if (end + 4 < head.length) socket.unshift(head.subarray(end + 4));
    const text = head.toString('latin1', 0, end);
    if (!/^HTTP\/1\.[01] 200/.test(text)) {
      socket.destroy();
      const reason = /\r\nx-ptc-network: ([^\r]*)/i.exec(text)?.[1];
      return answer(new Error(reason ?? `the network proxy refused CONNECT ${target}: ${text.split('\r\n')[0]}`), null);
    }
    if (options.protocol !== 'https:') return answer(null, socket);
    const secure = connectTls({ socket, servername: options.servername ?? options.hostname, ALPNProtocols: ['http/1.1'] });
    secure.once('secureConnect', () => answer(null, secure));
    secure.once('error', (error) => answer(error, null));
  };
  socket.on('data', onData);
}

/** Moves the reasons the forwarder has posted into `refusals`. */
function drainReasons(): void {
  if (reasons === undefined) return;
  for (let next = receiveMessageOnPort(reasons); next !== undefined; next = receiveMessageOnPort(reasons)) {
    const [authority, message] = next.message as [string, string];
    refusals.set(authority, message);
  }
}

/** The proxy's own sentence: a denial, or why it could not reach an allowed destination. */
function isProxyReason(message: string | null): message is string {
  return message !== null && (stringStartsWith(message, DENIAL_PREFIX) || stringStartsWith(message, 'ptc network proxy: '));
}

/** Whether a fetch failed on the proxy's answer to CONNECT (undici's tunnelling error, or the reason
 * the old-Node connector raised), not for another reason that a stale refusal must not relabel. */
function refusedByProxy(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const message = (current as { message?: unknown }).message;
    if (typeof message === 'string' && (stringIncludes(message, 'Proxy response (') || isProxyReason(message))) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Replaces the global fetch (before any evaluator copies it) with one that rejects on a denial. */
function guardFetch(): void {
  const nativeFetch = globalThis.fetch;
  if (typeof nativeFetch !== 'function') return;
  const fetch = function fetch(this: unknown, input: unknown, init?: unknown): Promise<Response> {
    const destination = destinationOf(input);
    return then(
      apply(nativeFetch, this, [input, init]) as Promise<Response>,
      (response: Response) => {
        drainReasons();
        // The proxy's own answers (403 denied, 502 unresolvable or unreachable) are network
        // failures, as they would be without a proxy; a destination's 403 or 502 is its answer.
        const message = response.status === 403 || response.status === 502 ? response.headers.get('x-ptc-network') : null;
        if (!isProxyReason(message)) return response;
        void response.body?.cancel().catch(() => {});
        throw new TypeErrorCtor(message);
      },
      (error: unknown): Response => {
        // A CONNECT the proxy refused: undici's error does not carry the proxy's reason.
        drainReasons();
        const message = destination === undefined ? undefined : refusals.get(destination);
        if (message === undefined || !refusedByProxy(error)) throw error;
        refusals.delete(destination!);
        throw new TypeErrorCtor(message, { cause: error });
      },
    ) as Promise<Response>;
  };
  Object.defineProperty(globalThis, 'fetch', { value: fetch, writable: true, configurable: true, enumerable: true });
}

/** "host:port" as the proxy writes it, for a fetch input that is a URL string, URL or Request. */
function destinationOf(input: unknown): string | undefined {
  try {
    const url = new URL(typeof input === 'object' && input !== null && 'url' in input ? String((input as { url: unknown }).url) : String(input));
    const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
    return `${url.hostname}:${port}`;
  } catch {
    return undefined;
  }
}
