// cpuTimeMs, maxMemoryMb and maxDiskMb: checked here for the configuration and for a request. All
// are measured where the carrier's process tree is, from /proc (and a cgroup where there is one):
// on this machine for a local carrier, which then needs Linux here, and by the relay on the far
// side for a carrier behind ssh or a command prefix (relay/limits.ts and the relay's disk
// watch), which checks there.
import { procAvailable } from '../../supervision/resources/proc.ts';
import { ioAccountingAvailable } from '../../supervision/disk-usage.ts';
import { isRemoteLaunch, type LaunchConfig } from '../worker/launch.ts';
import { show } from '../../wire/show.ts';

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

/**
 * A gibibyte: far above what a program for an agent writes (reports, tables, a downloaded file or
 * two), far below the free space of the machines it runs on, and reached at disk speed within
 * seconds, well inside the default deadline (timeoutMs 120 s), in which a program could otherwise
 * fill a disk of a hundred gigabytes and more.
 */
export const DEFAULT_DISK_MB = 1024;

/**
 * maxDiskMb: a positive integer, null for none, or undefined for DEFAULT_DISK_MB. The disk use of
 * a local carrier is watched through /proc/<pid>/io; where this machine has none, an explicit
 * limit is refused and the default is none (the report says `disk: 'none'`). A remote carrier's
 * relay watches its own machine and refuses to start where it cannot.
 */
export function diskLimit(value: unknown, where: string, launch: LaunchConfig | undefined): number | null {
  if (value === null) return null;
  const remote = isRemoteLaunch(launch);
  if (value === undefined) return remote || ioAccountingAvailable() ? DEFAULT_DISK_MB : null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${where}: maxDiskMb must be a positive integer or null for none, got ${show(value)}`);
  }
  if (!remote && !ioAccountingAvailable()) {
    throw new RangeError(`${where}: maxDiskMb needs Linux's /proc/<pid>/io to measure what the carrier's process tree writes, which this ${process.platform} machine does not have (set maxDiskMb: null for none)`);
  }
  return value;
}
