// What hosts killed before they could clean up (kill -9, a crash, a reboot) left in the temp
// directory: their host directories (supervision/host-temp.ts). Each process of this user
// sweeps them once, at its first runtime; the runtime's dispose() waits for the sweep to finish.
import { sweepHostDirectories } from '../../supervision/host-temp.ts';

let sweep: Promise<void> | undefined;

/** Starts (once per process) removing the host directories of this user's hosts that are gone. */
export function sweepLeftovers(): Promise<void> {
  sweep ??= sweepHostDirectories().catch(() => {});
  return sweep;
}
