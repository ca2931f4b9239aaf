// The far side's end of a network allowlist: the sandbox's forwarder (carrier/network/forward.ts)
// connects to a Unix socket bound into the sandbox at /run/ptc-network/proxy.sock, as it does on the
// host; here the relay listens on it and carries each connection, unread, to the host as a stream
// of the multiplex (protocol/mux-streams.ts). The host connects each one to its own proxy, which
// decides and counts: no rule, resolver or proxy code runs on this machine.
import { closeSync, openSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { MuxStreams } from '../wire/mux-streams.ts';
import { PROXY_SOCKET_NAME } from '../supervision/launch.ts';

/** sun_path is 108 bytes on Linux, the terminating NUL included. */
const MAX_SOCKET_PATH_BYTES = 107;
/** As the host's proxy (host/sandbox/network/proxy.ts): a program needs no more at once. */
const MAX_CONNECTIONS = 256;

/** Listens in `directory` before the carrier starts; `opened(id)` announces each connection (an N frame). */
export function listenForProxy(directory: string, streams: MuxStreams, opened: (id: number) => void): Server {
  let next = 1;
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    const id = next++;
    opened(id);
    streams.add(id, socket);
  });
  server.maxConnections = MAX_CONNECTIONS;
  server.on('error', () => {});
  const path = join(directory, PROXY_SOCKET_NAME);
  // Too long to bind by name (a deep TMPDIR): bind through a descriptor for the directory.
  const fd = Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES ? openSync(directory, 'r') : undefined;
  // A Unix socket is bound synchronously here, so it exists before the carrier is spawned.
  server.listen(fd === undefined ? path : `/proc/self/fd/${fd}/${PROXY_SOCKET_NAME}`);
  if (fd !== undefined) closeSync(fd);
  server.unref();
  return server;
}
