// Connections from the proxy to an allowed destination, bounded in time to connect (the OS would
// wait minutes for a SYN that is never answered), and joined to the client with backpressure.
import { connect, type Socket } from 'node:net';
import type { Passage } from './gate.ts';
import { createReads, pipeReads, type Reads } from './reads.ts';

/** A connection to a destination, with its reads (see reads.ts). */
export type Upstream = { socket: Socket; reads: Reads };

/** Destroys `socket` with ETIMEDOUT unless it connects within `ms`. */
export function connectDeadline(socket: Socket, ms: number): void {
  if (!socket.connecting) return;
  const timer = setTimeout(() => socket.destroy(Object.assign(new Error(`connect ETIMEDOUT after ${ms} ms`), { code: 'ETIMEDOUT' })), ms).unref();
  socket.once('connect', () => clearTimeout(timer));
  socket.once('close', () => clearTimeout(timer));
}

/** A TCP connection to the checked addresses of an allowed destination, not yet connected. */
export function openUpstream(passage: Passage & { kind: 'allowed' }, timeoutMs: number, track: (socket: Socket) => void): Upstream {
  const reads = createReads();
  // No Nagle: a tunnel carries whatever the client wrote, often small interactive writes, and a
  // forwarded request head goes out in one write.
  const socket = connect({ host: passage.host, port: passage.port, lookup: passage.lookup, autoSelectFamily: true, noDelay: true, onread: reads.onread });
  reads.attach(socket);
  // A failing socket destroys itself; whoever uses it listens too. This one covers the idle times
  // (in the pool, between connecting and splicing), when an unheard 'error' would take the host down.
  socket.on('error', () => {});
  track(socket);
  connectDeadline(socket, timeoutMs);
  return { socket, reads };
}

/** openUpstream, connected; rejects with the socket error. */
export function openTunnel(passage: Passage & { kind: 'allowed' }, timeoutMs: number, track: (socket: Socket) => void): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    const upstream = openUpstream(passage, timeoutMs, track);
    const { socket } = upstream;
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(upstream);
    });
  });
}

/** Joins both ways with backpressure (the faster side waits); either side ending or failing ends both. */
export function splice(client: Socket, upstream: Upstream): void {
  const { socket } = upstream;
  const finish = (): void => {
    client.destroy();
    socket.destroy();
  };
  client.on('error', finish).on('close', finish);
  socket.on('error', finish).on('close', finish);
  client.pipe(socket);
  // The download side, usually the heavy one, skips the stream machinery (reads.ts).
  pipeReads(upstream.reads, client);
  socket.once('end', () => client.end());
  client.resume();
}
