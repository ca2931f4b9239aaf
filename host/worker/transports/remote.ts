// What the worker needs from a far machine reached through a stdio-only transport: facts for the
// sandbox plan (its Node, whether bubblewrap works there), and the command that starts a relay.
// Preparing may deliver the bootstrap; it happens once per runtime and target, before any carrier.
import type { RelayStart } from '../../../wire/mux.ts';
import type { RelayedLaunch } from './relayed.ts';

export interface RemoteFacts {
  /** The far side's Node, `v20.20.2`. */
  node: string;
  bwrapPath: string;
  /** Why bubblewrap cannot confine there; undefined when it can. */
  bwrapUnavailable: string | undefined;
}

export interface RemoteTarget {
  /** Names the far side in messages and in the recipe key. */
  readonly describe: string;
  /** Connects (once), checks the far side and delivers the bootstrap; rejects with a message naming
   * the remote problem. With `bwrapPath`, the facts are about that bubblewrap there. */
  prepare(bwrapPath?: string): Promise<RemoteFacts>;
  /** The transport command for one relay, preparing first if the connection was lost since. */
  relay(start: RelayStart): Promise<RelayedLaunch>;
  /** Closes shared connections and removes what preparing created here. */
  close(): Promise<void>;
  /** The same, synchronously, for a host that is exiting. */
  closeNow(): void;
  /** Drops what preparing learned (a relay failed to start): the next carrier prepares again, over
   * the connection there is while it lasts (it carries the carriers in use: it is not replaced). */
  forget(): void;
}

/** The oldest Node the bootstrap runs on (esbuild's target in build/build.ts). */
export const MIN_REMOTE_NODE = [20, 12] as const;

/** Why `version` is too old for the bootstrap, or undefined. */
export function nodeTooOld(version: string): boolean {
  const [major = 0, minor = 0] = /^v?(\d+)\.(\d+)/.exec(version)?.slice(1).map(Number) ?? [];
  return major < MIN_REMOTE_NODE[0] || (major === MIN_REMOTE_NODE[0] && minor < MIN_REMOTE_NODE[1]);
}
