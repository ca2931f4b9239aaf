// CPU time, memory and disk use of a carrier's process tree: measured where the tree is (this host
// for a local carrier, the relay for a remote one), so the code is shared through carrier/protocol/.
export { ResourceGuard, cpuMessage, memoryMessage, MEMORY_SAMPLE_MS, IDLE_MEMORY_SAMPLE_MS, type MemoryEnforcement, type DiskEnforcement, type TreeLimits, type CpuOverrun, type ResourceLimits } from '../../../supervision/resources/guard.ts';
export { procAvailable } from '../../../supervision/resources/proc.ts';
