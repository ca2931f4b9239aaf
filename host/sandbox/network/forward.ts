// One forwarded request of the HTTP front door, after its destination passed the gate: the request
// goes upstream on a kept-alive connection (pool.ts) or a new one, and the answer comes back read by
// hand (response.ts). A body with a length, the common case, goes from the destination's reads
// straight to the client's socket once its head is out; chunked and close-delimited bodies go
// through the ServerResponse, which frames them for the client. Each request on a client connection
// comes here on its own, so every one of them is checked against the rules.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { hostPort, type Passage } from './gate.ts';
import type { Pool } from './pool.ts';
import { createChunkedReader, framingOf, keepsAlive, parseHead, type Framing } from './response.ts';
import { openUpstream } from './upstream.ts';

export type Exchange = {
  req: IncomingMessage;
  res: ServerResponse;
  passage: Passage & { kind: 'allowed' };
  /** The Host the destination sees: the request target's authority. */
  authority: string;
  path: string;
  /** End-to-end request header pairs, without Host. */
  headers: string[];
};

export type ExchangeContext = {
  pool: Pool;
  connectTimeoutMs: number;
  maxHeadBytes: number;
  track: (socket: Socket) => void;
  /** Strips hop-by-hop pairs from the destination's headers. */
  endToEnd: (raw: string[]) => string[];
  /** Answers the client when the exchange failed; the response may be under way. */
  fail: (error: unknown) => void;
};

// node:http's ClientRequest refuses the same: a request line must be one line of visible bytes.
const BAD_PATH = /[^\u0021-\u00ff]/;

/** Sends `x.req` to its destination and its answer to `x.res`; throws before anything is sent when the request cannot be written. */
export function exchange(x: Exchange, context: ExchangeContext): void {
  const { req, res, passage } = x;
  if (BAD_PATH.test(x.path)) throw Object.assign(new TypeError(`the path has characters a request line cannot carry`), { code: 'ERR_UNESCAPED_CHARACTERS' });
  const chunkedRequest = req.headers['transfer-encoding'] !== undefined;
  let head = `${req.method} ${x.path} HTTP/1.1\r\nHost: ${x.authority}\r\n`;
  for (let i = 0; i < x.headers.length; i += 2) head += `${x.headers[i]}: ${x.headers[i + 1]}\r\n`;
  if (chunkedRequest) head += 'Transfer-Encoding: chunked\r\n';
  head += '\r\n';

  const key = hostPort(passage.host, passage.port);
  const upstream = context.pool.take(key) ?? openUpstream(passage, context.connectTimeoutMs, context.track);
  const { socket, reads } = upstream;
  const method = req.method ?? 'GET';
  let phase: 'head' | 'body' | 'done' = 'head';
  let partial: Buffer | undefined;
  let framing: Framing = { kind: 'close' };
  let left = 0;
  let reusable = false;
  let direct: Socket | null = null;
  let requestSent = false;
  const chunks = createChunkedReader();

  const detach = (): void => {
    socket.off('error', fail);
    socket.off('end', ended);
    socket.off('close', closed);
    req.off('data', sendBody);
    req.off('end', sendEnd);
    req.off('error', fail);
  };
  function fail(error: unknown): void {
    if (phase === 'done') return;
    phase = 'done';
    detach();
    socket.destroy();
    context.fail(error);
  }
  const finish = (leftover: boolean): void => {
    phase = 'done';
    detach();
    res.end();
    if (reusable && !leftover && requestSent) context.pool.give(key, upstream);
    else socket.destroy();
  };
  function ended(): void {
    if (phase === 'body' && framing.kind === 'close') return finish(false);
    fail(Object.assign(new Error('the destination closed the connection before the response ended'), { code: 'ECONNRESET' }));
  }
  function closed(): void {
    fail(Object.assign(new Error('the connection to the destination closed'), { code: 'ECONNRESET' }));
  }
  socket.on('error', fail);
  socket.on('end', ended);
  socket.on('close', closed);
  // The client went away mid-response: stop the upstream too, so neither socket lingers.
  res.on('close', () => {
    if (phase !== 'done') fail(new Error('the client closed the connection'));
  });

  const write = (piece: Buffer): Writable => {
    if (direct !== null) {
      direct.write(piece);
      return direct;
    }
    res.write(piece);
    return res;
  };
  const body = (chunk: Buffer): Writable | undefined => {
    if (framing.kind === 'length') {
      const take = Math.min(left, chunk.length);
      const sink = take > 0 ? write(chunk.subarray(0, take)) : undefined;
      left -= take;
      if (left === 0) finish(chunk.length > take);
      return sink;
    }
    if (framing.kind === 'chunked') {
      const taken = chunks.feed(chunk, (piece) => void res.write(piece));
      if (taken !== undefined) finish(taken < chunk.length);
      return res;
    }
    return write(chunk);
  };
  const answer = (chunk: Buffer): Writable | undefined => {
    if (phase === 'body') {
      try {
        return body(chunk);
      } catch (error) {
        return void fail(error);
      }
    }
    if (phase !== 'head') return undefined;
    const data = partial === undefined ? chunk : Buffer.concat([partial, chunk]);
    try {
      const parsed = parseHead(data, context.maxHeadBytes);
      if (parsed === undefined) {
        partial = data === chunk ? Buffer.from(chunk) : data;
        return undefined;
      }
      partial = undefined;
      const rest = data.subarray(parsed.bytes);
      // 1xx: interim answers (100 Continue, 103 Early Hints) are not forwarded, as node:http did not;
      // 101 cannot come, since Upgrade is never sent on.
      if (parsed.status < 200) {
        if (parsed.status === 101) throw Object.assign(new Error('the destination switched protocols unasked'), { code: 'HPE_INVALID_RESPONSE' });
        return rest.length > 0 ? answer(rest) : undefined;
      }
      framing = framingOf(parsed, method);
      reusable = keepsAlive(parsed, framing);
      res.writeHead(parsed.status, parsed.reason, context.endToEnd(parsed.rawHeaders));
      phase = 'body';
      if (framing.kind === 'none') return void finish(rest.length > 0);
      if (framing.kind === 'length') {
        left = framing.bytes;
        if (left === 0) return void finish(rest.length > 0);
        // The head goes out now, so the body's bytes can follow it on the socket itself.
        res.flushHeaders();
        direct = res.socket;
      }
      return rest.length > 0 ? body(rest) : undefined;
    } catch (error) {
      return void fail(error);
    }
  };
  reads.consume(answer);

  function sendBody(chunk: Buffer): void {
    // An empty chunk would read as the last one.
    if (chunk.length === 0) return;
    const ok = socket.write(chunkedRequest ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk);
    if (!ok) {
      req.pause();
      socket.once('drain', () => req.resume());
    }
  }
  function sendEnd(): void {
    if (chunkedRequest) socket.write('0\r\n\r\n');
    requestSent = true;
  }
  socket.write(head, 'latin1');
  req.on('data', sendBody);
  req.on('end', sendEnd);
  req.on('error', fail);
}
