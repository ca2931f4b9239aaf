// The library's `ptc/configuration` entry, for profile editors, as the reference's
// `/configuration` path: the retained-execution settings to merge into a profile, importable
// without loading the runtime (this entry's bundle holds only this function).
export { resolvePersistentExecution, type PersistentExecution } from './runtime/configuration.ts';
export type { ExecutionMode } from './runtime/config.ts';
export type { ProgramFormat } from '../wire/messages.ts';
