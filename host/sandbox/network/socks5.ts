// The SOCKS5 front door (RFC 1928) for TCP that is not HTTP: no authentication, CONNECT only, to a
// domain name, an IPv4 or an IPv6 address. BIND and UDP ASSOCIATE are refused: the sandbox has no
// other way out, so UDP is impossible by construction.
import type { Socket } from 'node:net';
import { formatAddress, parseAddress } from './ip.ts';
import type { Gate } from './gate.ts';
import { openTunnel, splice, type Upstream } from './upstream.ts';

// RFC 1928 §6 reply codes.
export const SOCKS_REPLY = { succeeded: 0x00, failure: 0x01, notAllowed: 0x02, networkUnreachable: 0x03, hostUnreachable: 0x04, refused: 0x05, ttlExpired: 0x06, commandNotSupported: 0x07, addressTypeNotSupported: 0x08 } as const;

/** Greeting (at most 257 bytes) plus request (at most 262): anything longer is not SOCKS5. */
const MAX_HANDSHAKE_BYTES = 257 + 262;

export function serveSocks5(socket: Socket, gate: Gate, options: { connectTimeoutMs: number; headTimeoutMs: number; track: (socket: Socket) => void }): void {
  let buffered = Buffer.alloc(0);
  let stage: 'greeting' | 'request' | 'done' = 'greeting';
  const fail = (code: number): void => {
    stage = 'done';
    socket.off('data', onData);
    // Drain what the client still sends, so the close is a FIN after the reply, not a reset.
    socket.resume();
    socket.setTimeout(options.headTimeoutMs);
    socket.end(reply(code));
  };
  const onData = (chunk: Buffer): void => {
    buffered = Buffer.concat([buffered, chunk]);
    if (buffered.length > MAX_HANDSHAKE_BYTES) return void socket.destroy();
    if (stage === 'greeting') {
      if (buffered.length < 2) return;
      const methods = buffered[1]!;
      if (buffered.length < 2 + methods) return;
      const offered = buffered.subarray(2, 2 + methods);
      buffered = buffered.subarray(2 + methods);
      // 0x00 = no authentication; 0xff = no acceptable method, then the client closes.
      if (!offered.includes(0x00)) {
        stage = 'done';
        socket.off('data', onData);
        return void socket.end(Buffer.from([0x05, 0xff]));
      }
      socket.write(Buffer.from([0x05, 0x00]));
      stage = 'request';
    }
    if (stage === 'request') {
      const request = parseRequest(buffered);
      if (request === 'incomplete') return;
      socket.off('data', onData);
      socket.pause();
      stage = 'done';
      if (request === 'bad version') return void socket.destroy();
      if (typeof request === 'number') return fail(request);
      connectTo(request.host, request.port, buffered.subarray(request.length)).catch(() => fail(SOCKS_REPLY.failure));
    }
  };
  const connectTo = async (host: string, port: number, early: Buffer): Promise<void> => {
    socket.setTimeout(0);
    const passage = await gate({ host, port });
    if (passage.kind === 'denied') return fail(SOCKS_REPLY.notAllowed);
    if (passage.kind === 'unresolved') return fail(SOCKS_REPLY.hostUnreachable);
    let upstream: Upstream;
    try {
      upstream = await openTunnel(passage, options.connectTimeoutMs, options.track);
    } catch (error) {
      return fail(errorReply((error as { code?: unknown }).code));
    }
    if (socket.destroyed) return void upstream.socket.destroy();
    socket.write(reply(SOCKS_REPLY.succeeded));
    if (early.length > 0) upstream.socket.write(early);
    splice(socket, upstream);
  };
  socket.on('data', onData);
}

type Request = { host: string; port: number; length: number };

function parseRequest(data: Buffer): Request | number | 'incomplete' | 'bad version' {
  if (data.length < 5) return 'incomplete';
  if (data[0] !== 0x05) return 'bad version';
  if (data[1] !== 0x01) return SOCKS_REPLY.commandNotSupported;
  const type = data[3];
  const start = type === 0x03 ? 5 : 4;
  const size = type === 0x01 ? 4 : type === 0x04 ? 16 : type === 0x03 ? data[4]! : undefined;
  if (size === undefined) return SOCKS_REPLY.addressTypeNotSupported;
  if (data.length < start + size + 2) return 'incomplete';
  const raw = data.subarray(start, start + size);
  const port = data.readUInt16BE(start + size);
  let host: string;
  if (type === 0x01) host = [...raw].join('.');
  else if (type === 0x04) host = formatAddress({ family: 6, value: BigInt(`0x${raw.toString('hex')}`) });
  else host = raw.toString('latin1');
  // IPv4-mapped IPv6 comes out as IPv4, the form the rules compare.
  const address = parseAddress(host);
  return { host: address === undefined ? host : formatAddress(address), port, length: start + size + 2 };
}

function errorReply(code: unknown): number {
  if (code === 'ECONNREFUSED') return SOCKS_REPLY.refused;
  if (code === 'ETIMEDOUT') return SOCKS_REPLY.ttlExpired;
  if (code === 'ENETUNREACH') return SOCKS_REPLY.networkUnreachable;
  if (code === 'EHOSTUNREACH') return SOCKS_REPLY.hostUnreachable;
  return SOCKS_REPLY.failure;
}

/** A reply with BND.ADDR 0.0.0.0:0: the client reaches the destination only through this socket. */
function reply(code: number): Buffer {
  return Buffer.from([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);
}
