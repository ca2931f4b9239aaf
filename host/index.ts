// The ptc library: create a runtime, resolve a request, run it, read the result.
export { createRuntime } from './runtime.ts';
export type { Runtime, RunRequest, RunSpec, RunOptions, TimeoutDescriptor } from './runtime.ts';
export type { RuntimeConfig, ResolvedConfig, LaunchConfig, ExecutionMode } from './config.ts';
export { DEFAULTS } from './config.ts';
export type { RunResult, SandboxReport, EnvironmentReport } from './execution.ts';
export { resolvePersistentExecution, type PersistentExecution } from './configuration.ts';
export type { ProgramFormat } from './instructions.ts';
export type { SandboxPolicy, SandboxMode, SandboxOptions, SandboxBackend, Enforcement } from './sandbox/index.ts';
export type { Failure, FailureKind } from './failures.ts';
export type { OutputEntry } from './output-ledger.ts';
export { image, type Bindings, type BindingFunction, type ImageRef } from './bindings.ts';
export type { JsonValue } from '../carrier/protocol/json.ts';
export { PROTOCOL_REVISION } from '../carrier/protocol/revision.ts';
