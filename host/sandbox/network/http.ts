// The HTTP front door: absolute-form requests forwarded with keep-alive on both sides (forward.ts),
// and CONNECT tunnels. Node's own parser reads the requests, so header size is bounded (431 past the
// limit); the destinations' answers are read by hand (response.ts), with the same bound.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { hostPort, type Gate, type Passage } from './gate.ts';
import { exchange } from './forward.ts';
import { createPool } from './pool.ts';
import { openTunnel, splice, type Upstream } from './upstream.ts';

export type HttpFront = { server: Server; close(): void };
export type Track = (socket: Socket) => void;

/** Node's default (16 KiB) is what curl and browsers live with; one request head must fit. */
export const MAX_HEADER_BYTES = 16 * 1024;

// RFC 9110 §7.6.1: connection-specific fields a proxy must not forward.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect']);

export function createHttpFront(gate: Gate, options: { connectTimeoutMs: number; track: Track }): HttpFront {
  const pool = createPool();
  // Whatever goes wrong in handling one request (a resolver that returns garbage, a request Node's
  // client refuses) fails that request; an unhandled rejection would take the host down.
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false }, (req, res) => {
    forward(req, res).catch((error: unknown) => {
      if (res.headersSent) res.destroy();
      else respond(res, 502, `ptc network proxy: cannot forward ${quote(req.url)}: ${(error as Error).message}`);
    });
  });
  server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    tunnel(req, socket as Socket, head).catch((error: unknown) => reply(socket as Socket, 502, `ptc network proxy: cannot connect to ${quote(req.url)}: ${(error as Error).message}`));
  });
  server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    reply(socket as Socket, 501, 'ptc network proxy: protocol upgrades are not forwarded; connect with CONNECT instead');
  });

  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.socket.setTimeout(0);
    const target = /^http:\/\/([^/?#]*)(.*)$/is.exec(req.url ?? '');
    if (target === null) {
      req.resume();
      const hint = /^https:/i.test(req.url ?? '') ? 'https goes through CONNECT' : 'expected an absolute URL such as http://host/path';
      return void respond(res, 400, `ptc network proxy: cannot forward ${quote(req.url)}: ${hint}`);
    }
    const authority = parseAuthority(target[1]!, 80);
    if (authority === undefined) {
      req.resume();
      return void respond(res, 400, `ptc network proxy: ${quote(target[1])} is not a valid host and port`);
    }
    const passage = await gate(authority);
    if (passage.kind !== 'allowed') {
      req.resume();
      return void respond(res, passage.kind === 'denied' ? 403 : 502, passage.message);
    }
    // The client gave up while the name resolved: nothing to forward to.
    if (res.destroyed) return;
    const path = target[2] === '' ? '/' : target[2]!.startsWith('/') ? target[2]! : `/${target[2]}`;
    // RFC 9112 §3.2.2: the Host a proxy sends is the request target's, whatever the client said,
    // so a Host header cannot steer the request to another site on the same server (domain fronting).
    exchange(
      { req, res, passage, authority: target[1]!, path, headers: endToEnd(req.rawHeaders, ['host']) },
      {
        pool,
        connectTimeoutMs: options.connectTimeoutMs,
        maxHeadBytes: MAX_HEADER_BYTES,
        track: options.track,
        endToEnd,
        fail(error) {
          // Once the answer is under way (or the client gone), the client can only be cut off.
          if (res.headersSent || res.destroyed) res.destroy();
          else respond(res, 502, unreachable(passage, error));
        },
      },
    );
  }

  async function tunnel(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    socket.setTimeout(0);
    socket.on('error', () => socket.destroy());
    const authority = parseAuthority(req.url ?? '', undefined);
    if (authority === undefined) return reply(socket, 400, `ptc network proxy: CONNECT needs host:port, got ${quote(req.url)}`);
    const passage = await gate(authority);
    if (passage.kind !== 'allowed') return reply(socket, passage.kind === 'denied' ? 403 : 502, passage.message);
    let upstream: Upstream;
    try {
      upstream = await openTunnel(passage, options.connectTimeoutMs, options.track);
    } catch (error) {
      return reply(socket, 502, unreachable(passage, error));
    }
    if (socket.destroyed) return void upstream.socket.destroy();
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.socket.write(head);
    splice(socket, upstream);
  }

  return {
    server,
    close() {
      pool.destroy();
      server.closeAllConnections();
    },
  };
}

/** `host:port`, `[v6]:port`, or a bare host when `defaultPort` is given; undefined when malformed. */
function parseAuthority(text: string, defaultPort: number | undefined): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]*\]|[^:@[\]]+)(?::(\d{1,5}))?$/.exec(text);
  if (match === null) return undefined;
  const port = match[2] === undefined ? defaultPort : Number(match[2]);
  if (port === undefined || !(port >= 1 && port <= 65535)) return undefined;
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

/** The header pairs of `raw` minus hop-by-hop ones, those the Connection header names, and `drop`. */
function endToEnd(raw: string[], drop: string[] = []): string[] {
  const named = new Set([...HOP_BY_HOP, ...drop]);
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') for (const token of raw[i + 1]!.split(',')) named.add(token.trim().toLowerCase());
  }
  const kept: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (!named.has(raw[i]!.toLowerCase())) kept.push(raw[i]!, raw[i + 1]!);
  return kept;
}

function unreachable(passage: Passage, error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return `ptc network proxy: cannot reach ${hostPort(passage.host, passage.port)}${typeof code === 'string' ? ` (${code})` : ''}`;
}

// The message is also the status line's reason phrase: clients that report only the status line
// (Node's https through a proxy: "Failed to establish tunnel ...: HTTP/1.1 403 blocked by ...")
// still tell the program why.

/** A plain-text answer on a forwarding connection; the message is the reason phrase, the body and the x-ptc-network header. */
function respond(res: ServerResponse, status: number, message: string): void {
  const body = `${message}\n`;
  res.writeHead(status, message, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), 'x-ptc-network': message });
  res.end(body);
}

/** The same on a raw socket (CONNECT, upgrade), which then closes. */
function reply(socket: Socket, status: number, message: string): void {
  socket.resume();
  const body = `${message}\n`;
  socket.end(`HTTP/1.1 ${status} ${message}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-ptc-network: ${message}\r\nconnection: close\r\n\r\n${body}`);
}

function quote(text: unknown): string {
  return JSON.stringify(String(text).slice(0, 200));
}
