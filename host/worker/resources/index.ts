// CPU time, memory and disk use of a carrier's process tree: measured by the host, enforced per carrier.
export { ResourceGuard, cpuMessage, memoryMessage, MEMORY_SAMPLE_MS, IDLE_MEMORY_SAMPLE_MS, type MemoryEnforcement, type DiskEnforcement, type TreeLimits, type CpuOverrun } from './guard.ts';
export { procAvailable } from './proc.ts';
