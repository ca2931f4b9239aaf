// One carrier's network allowlist: the host-side proxy (network/proxy.ts) on a Unix socket in a
// directory of its own, which the sandbox binds in read-only (connecting to a socket needs no
// write access to the mount). The proxy lives as long as the carrier, so a retained environment
// keeps its rules; its counts are reset at the start of every run and reported at the end.
import { rmSync } from 'node:fs';
import { privateDirectory } from '../../carrier/protocol/host-temp.ts';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseNetworkRules } from './network/rules.ts';
import { startNetworkProxy, type NetworkProxy, type NetworkReport } from './network/proxy.ts';
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
  /** The directory holding the socket, for the sandbox to bind. */
  directory: string;
  socketPath: string;
  /** Stops the proxy and removes its directory. Idempotent. */
  close(): Promise<void>;
  /** Removes the directory, for a host that is exiting (the proxy dies with it). */
  closeSync(): void;
}

/** The report of a run that made no connection, as a result shows it before any counts exist. */
export function emptyNetworkReport(): NetworkReport {
  return { mode: 'allowlist', allowed: [], denied: [] };
}

/** Starts the proxy for `rules` in a new directory of this host's under the temp directory `tmp`. */
export function openAllowlist(rules: ResolvedNetworkRules, tmp: string): Allowlist {
  const directory = privateDirectory('net', tmp);
  const socketPath = join(directory, 'proxy.sock');
  const starting = startNetworkProxy({ rules: parseNetworkRules(rules), socketPath });
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
    session: {
      async begin() {
        await ready;
        proxy?.reset();
        return failure;
      },
      report: () => proxy?.report() ?? emptyNetworkReport(),
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
