// One carrier's network allowlist: the host-side proxy (network/proxy.ts) on a Unix socket in a
// directory of its own, which the sandbox binds in read-only (connecting to a socket needs no
// write access to the mount). The proxy lives as long as the carrier, so a retained environment
// keeps its rules; its counts are reset at the start of every run and reported at the end.
import { closeSync, openSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { privateDirectory } from '../../supervision/host-temp.ts';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseNetworkRules } from './network/rules.ts';
import type { NetworkProxy, NetworkReport } from './network/proxy.ts';
import type { ResolvedNetworkRules } from './policy.ts';

/** What the execution layer sees of a carrier's proxy. */
export interface NetworkSession {
  /** Waits for the proxy and clears its counts; resolves with why it could not start, or undefined. */
  begin(): Promise<string | undefined>;
  /** The destinations allowed and denied since begin(). */
  report(): NetworkReport;
}

export interface Allowlist {
  session: NetworkSession;
  /** The directory holding the socket, for the sandbox to bind at SANDBOX_NETWORK_DIRECTORY. */
  directory: string;
  socketPath: string;
  /** The socket's path inside the sandbox. */
  sandboxSocketPath: string;
  /** A connection to the proxy from this host: a remote sandbox's, carried by its relay. */
  connect(): Socket;
  /** Stops the proxy and removes its directory. Idempotent. */
  close(): Promise<void>;
  /** Removes the directory, for a host that is exiting (the proxy dies with it). */
  closeSync(): void;
}

/** The report of a run that made no connection, as a result shows it before any counts exist. */
export function emptyNetworkReport(): NetworkReport {
  return { mode: 'allowlist', allowed: [], denied: [] };
}

/** Where the sandbox sees the socket's directory: a Unix socket's path holds at most 107 bytes,
 * which the real one, deep in a long TMPDIR, can exceed. The sandbox's /run is its own tmpfs. */
export const SANDBOX_NETWORK_DIRECTORY = '/run/ptc-network';
const SOCKET_NAME = 'proxy.sock';
/** sun_path is 108 bytes on Linux, the terminating NUL included. */
const MAX_SOCKET_PATH_BYTES = 107;

/** Starts the proxy for `rules` in a new directory of this host's under the temp directory `tmp`. */
export function openAllowlist(rules: ResolvedNetworkRules, tmp: string): Allowlist {
  const directory = privateDirectory('net', tmp);
  const socketPath = join(directory, SOCKET_NAME);
  // Too long to bind by name: bind it through a descriptor for the directory, which the kernel
  // resolves (/proc/self/fd/N/proxy.sock names the same directory in a few bytes).
  const directoryFd = Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES && process.platform === 'linux' ? openSync(directory, 'r') : undefined;
  const listenPath = directoryFd === undefined ? socketPath : `/proc/self/fd/${directoryFd}/${SOCKET_NAME}`;
  // The proxy (and node:http under it) loads only for a run with an allowlist: every other host start would pay for it.
  const parsed = parseNetworkRules(rules);
  const starting = import('./network/proxy.ts').then(({ startNetworkProxy }) => startNetworkProxy({ rules: parsed, socketPath: listenPath })).finally(() => {
    if (directoryFd !== undefined) closeSync(directoryFd);
  });
  let proxy: NetworkProxy | undefined;
  let failure: string | undefined;
  const ready = starting.then(
    (started) => {
      proxy = started;
    },
    (error: unknown) => {
      failure = `the network proxy for the allowlist could not start on ${socketPath}: ${(error as Error).message}`;
    },
  );
  let closed: Promise<void> | undefined;
  return {
    directory,
    socketPath,
    sandboxSocketPath: `${SANDBOX_NETWORK_DIRECTORY}/${SOCKET_NAME}`,
    session: {
      async begin() {
        await ready;
        proxy?.reset();
        return failure;
      },
      report: () => proxy?.report() ?? emptyNetworkReport(),
    },
    connect() {
      // The path is as long to connect to as to bind: then through a descriptor, as above.
      if (Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH_BYTES || process.platform !== 'linux') return connect({ path: socketPath, allowHalfOpen: true });
      const fd = openSync(directory, 'r');
      const socket = connect({ path: `/proc/self/fd/${fd}/${SOCKET_NAME}`, allowHalfOpen: true });
      const done = (): void => closeSync(fd);
      socket.once('connect', done).once('error', () => socket.connecting || done());
      return socket;
    },
    close() {
      closed ??= ready.then(async () => {
        await proxy?.close().catch(() => {});
        await rm(directory, { recursive: true, force: true });
      });
      return closed;
    },
    closeSync() {
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
