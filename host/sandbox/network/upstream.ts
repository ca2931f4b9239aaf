// Connections from the proxy to an allowed destination, bounded in time to connect (the OS would
// wait minutes for a SYN that is never answered), and joined to the client with backpressure.
import { connect, type Socket } from 'node:net';
import type { Passage } from './gate.ts';

/** Destroys `socket` with ETIMEDOUT unless it connects within `ms`. */
export function connectDeadline(socket: Socket, ms: number): void {
  if (!socket.connecting) return;
  const timer = setTimeout(() => socket.destroy(Object.assign(new Error(`connect ETIMEDOUT after ${ms} ms`), { code: 'ETIMEDOUT' })), ms).unref();
  socket.once('connect', () => clearTimeout(timer));
  socket.once('close', () => clearTimeout(timer));
}

/** A TCP connection to the checked addresses of an allowed destination; rejects with the socket error. */
export function openTunnel(passage: Passage & { kind: 'allowed' }, timeoutMs: number, track: (socket: Socket) => void): Promise<Socket> {
  return new Promise((resolve, reject) => {
    // No Nagle: a tunnel carries whatever the client wrote, often small interactive writes.
    const socket = connect({ host: passage.host, port: passage.port, lookup: passage.lookup, autoSelectFamily: true, noDelay: true });
    track(socket);
    connectDeadline(socket, timeoutMs);
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
  });
}

/** Pipes both ways (pipe() pauses the faster side); either side ending or failing ends both. */
export function splice(client: Socket, upstream: Socket): void {
  const finish = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', finish).on('close', finish);
  upstream.on('error', finish).on('close', finish);
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
}
