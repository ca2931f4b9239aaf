// CPU time and memory of a carrier's process tree: measured by the host, enforced per carrier.
export { ResourceGuard, cpuMessage, memoryMessage, MEMORY_SAMPLE_MS, type MemoryEnforcement, type Overrun } from './guard.ts';
export { procAvailable } from './proc.ts';
