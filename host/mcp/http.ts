// `ptc mcp --http`: MCP's Streamable HTTP transport, the SDK's own server transport on node:http.
// Each session is its own MCP server with its own upstreams (as over stdio, an upstream's
// sampling, elicitation and roots requests go to the client of that session), over one shared
// runtime. It listens on loopback unless told otherwise, and elsewhere only with a bearer token,
// which every request must then carry.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { McpConfigError } from './config.ts';

/** The one path MCP is served on, as the SDK's examples and most clients' configs have it. */
export const MCP_PATH = '/mcp';
/** How long a session with no request in flight is kept: a client that went away without DELETE leaves one behind. */
export const SESSION_IDLE_MS = 30 * 60 * 1000;
/** The largest request body read: a program is text, and the runtime bounds its own messages. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface Listen {
  host: string;
  port: number;
}

/** Parses `--http [HOST:]PORT`; the host defaults to 127.0.0.1. */
export function parseListen(value: string): Listen {
  const match = /^(?:(\[[^\]]+\]|[^:]+):)?(\d+)$/.exec(value);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || !Number.isSafeInteger(port) || port > 65_535) throw new McpConfigError(`--http must be PORT or HOST:PORT (an IPv6 address in brackets), with a port from 0 to 65535, got ${JSON.stringify(value)}`);
  const host = match[1] === undefined ? '127.0.0.1' : match[1].replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

/** Whether an address to listen on is this machine's loopback (127.0.0.0/8, ::1 or localhost). */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1' || host === '0:0:0:0:0:0:0:1' || /^::ffff:127\./i.test(host);
}

export interface HttpSession {
  /** Connects the session's own MCP server to the transport. */
  connect(transport: StreamableHTTPServerTransport): Promise<void>;
  close(): Promise<void>;
}

/**
 * Listens and serves until `until` settles; then every session is closed. `token`, when given,
 * is required of every request as `Authorization: Bearer <token>`. `onListening` gets the URL.
 */
export async function serveHttp(listen: Listen, token: string | undefined, newSession: () => HttpSession, until: Promise<void>, onListening: (url: string) => void, idleMs = SESSION_IDLE_MS): Promise<void> {
  if (!isLoopback(listen.host) && token === undefined) {
    throw new McpConfigError(`--http ${listen.host}:${listen.port} would accept connections from other machines, and any of them could run programs: give a token (PTC_MCP_TOKEN, or --token) that clients must send as "Authorization: Bearer <token>", or listen on loopback (127.0.0.1)`);
  }
  // Compared as digests, so the comparison takes the same time whatever the length or content.
  const expected = token === undefined ? undefined : digest(token);
  const sessions = new Map<string, Entry>();
  // A session's requests in flight (its GET stream is one while open); with none for idleMs, it is closed.
  const track = (entry: Entry, response: ServerResponse): void => {
    entry.inFlight++;
    clearTimeout(entry.idle);
    response.once('close', () => {
      if (--entry.inFlight > 0) return;
      entry.idle = setTimeout(() => void entry.transport.close().catch(() => {}), idleMs);
      entry.idle.unref();
    });
  };
  let allowedHosts: string[] | undefined;

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (expected !== undefined && !authorized(request.headers.authorization, expected)) {
      response.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Unauthorized: this server needs "Authorization: Bearer <token>" with its token' }, id: null }));
      return;
    }
    if (new URL(request.url ?? '/', 'http://localhost').pathname !== MCP_PATH) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end(`ptc mcp serves MCP at ${MCP_PATH}\n`);
      return;
    }
    const id = request.headers['mcp-session-id'];
    const known = typeof id === 'string' ? sessions.get(id) : undefined;
    if (known !== undefined) {
      track(known, response);
      const body = request.method === 'POST' ? await readBody(request, response) : undefined;
      if (body === NO_BODY) return;
      await known.transport.handleRequest(request, response, body);
      return;
    }
    if (id !== undefined) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: `no session ${JSON.stringify(id)}: it ended, or this server restarted; initialize a new one` }, id: null }));
      return;
    }
    const body = request.method === 'POST' ? await readBody(request, response) : undefined;
    if (body === NO_BODY) return;
    if (!isInitializeRequest(body)) {
      response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no Mcp-Session-Id header, and the request is not initialize' }, id: null }));
      return;
    }
    const session = newSession();
    const entry: Entry = { transport: undefined!, session, inFlight: 0, idle: undefined };
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, entry);
        track(entry, response);
      },
      // A page in a browser can reach loopback too: a Host header other than ours is refused.
      ...(allowedHosts !== undefined ? { enableDnsRebindingProtection: true, allowedHosts } : {}),
    });
    entry.transport = transport;
    transport.onclose = () => {
      clearTimeout(entry.idle);
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      void session.close();
    };
    await session.connect(transport);
    await transport.handleRequest(request, response, body);
    // An initialize the transport refused made no session: nothing else would end this one.
    if (transport.sessionId === undefined || !sessions.has(transport.sessionId)) await session.close();
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      process.stderr.write(`ptc mcp: a request failed: ${(error as Error).message}\n`);
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new McpConfigError(`--http ${listen.host}:${listen.port}: cannot listen: ${error.message}`, { cause: error })));
    server.listen(listen.port, listen.host, resolve);
  });
  const { port } = server.address() as { port: number };
  const shown = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  if (isLoopback(listen.host)) allowedHosts = [`${shown}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`];
  onListening(`http://${shown}:${port}${MCP_PATH}`);
  try {
    await until;
  } finally {
    server.close();
    server.closeAllConnections();
    await Promise.all([...sessions.values()].map(async ({ transport, session }) => {
      await transport.close().catch(() => {});
      await session.close();
    }));
  }
}

interface Entry {
  transport: StreamableHTTPServerTransport;
  session: HttpSession;
  inFlight: number;
  idle: NodeJS.Timeout | undefined;
}

const NO_BODY = Symbol('no body');

/** The request's JSON body; on a body too large or not JSON, answers the request and gives NO_BODY. */
async function readBody(request: IncomingMessage, response: ServerResponse): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) {
      response.writeHead(413, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: `the request body passed ${MAX_BODY_BYTES} bytes` }, id: null }));
      request.destroy();
      return NO_BODY;
    }
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (error) {
    response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: `Parse error: ${(error as Error).message}` }, id: null }));
    return NO_BODY;
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer (.+)$/i.exec(header ?? '');
  return match !== null && timingSafeEqual(digest(match[1]!), expected);
}
