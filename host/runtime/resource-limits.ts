// cpuTimeMs and maxMemoryMb: checked here for the configuration and for a request. Both are
// measured where the carrier's process tree is, from /proc (and a cgroup where there is one): on
// this machine for a local carrier, which then needs Linux here, and by the relay on the far side
// for a carrier behind ssh or a command prefix (carrier/relay/limits.ts), which checks there.
import { procAvailable } from '../worker/resources/index.ts';
import { isRemoteLaunch, type LaunchConfig } from '../worker/launch.ts';
import { show } from '../execution/show.ts';

/** Below this a carrier cannot even start (an idle Node is ~40 MiB resident). */
export const MIN_MEMORY_MB = 64;

/** A CPU budget or memory limit: a positive integer, or null/undefined for none. `where` prefixes the message. */
export function resourceLimit(value: unknown, field: 'cpuTimeMs' | 'maxMemoryMb', where: string, launch: LaunchConfig | undefined): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${where}: ${field} must be a positive integer or null for none, got ${show(value)}`);
  }
  if (field === 'maxMemoryMb' && value < MIN_MEMORY_MB) {
    throw new RangeError(`${where}: maxMemoryMb must be at least ${MIN_MEMORY_MB} (a carrier needs that much to start), got ${show(value)}`);
  }
  if (!isRemoteLaunch(launch) && !procAvailable()) {
    throw new RangeError(`${where}: ${field} needs Linux's /proc to measure the carrier's process tree, which this ${process.platform} machine does not have`);
  }
  return value;
}
