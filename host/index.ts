// The ptc library: create a runtime, resolve a request, run it, read the result.
// First, so that an older Node is refused by version before any module that needs a newer one evaluates.
import './require-node.ts';
export { createRuntime } from './runtime/runtime.ts';
export type { Runtime, TimeoutDescriptor } from './runtime/runtime.ts';
export type { RunRequest, RunSpec, RunOptions, ResumeOptions } from './runtime/request.ts';
export type { RunHandle, RunningLook, YieldedRun } from './runtime/handle.ts';
export type { RunRecord, CallRecord, RevertRecord, SnippetRecord } from './runtime/journal.ts';
export type { RuntimeConfig, ResolvedConfig, LaunchConfig, ExecutionMode } from './runtime/config.ts';
export type { RuntimeDiagnostic } from './execution/settings.ts';
export { DEFAULTS } from './runtime/config.ts';
export type { RunResult, SandboxReport, EnvironmentReport } from './execution/owners.ts';
export type { PolicyChange } from './execution/owner-policy.ts';
export { resolvePersistentExecution, type PersistentExecution } from './runtime/configuration.ts';
export type { ProgramFormat } from './runtime/instructions.ts';
export type { SandboxPolicy, SandboxMode, SandboxOptions, SandboxBackend, Enforcement } from './sandbox/index.ts';
export type { Failure, FailureKind } from './execution/failures.ts';
export type { OutputEntry, OutputStream } from './execution/output-ledger.ts';
export {
  binding, type BindingOptions, type BindingCall, type PendingAction, type PendingProgram, type ApprovalOutcome, type ApprovalDecision, type ApprovalHandler,
  type ProgramApprovalHandler, type ApprovalScope, type ApprovalRule, type ApprovalRecord, type ReconcileContext, type ReconcileAnswer,
} from './execution/approval.ts';
// A binding reads the context of the call it answers (run, sequence, attempt, idempotency key) with callContext().
export { callContext, type CallContext } from './execution/call-context.ts';
export type { ApprovalConfig } from './runtime/approval-config.ts';
export { image, type Bindings, type BindingFunction, type ImageRef } from './execution/bindings.ts';
export type { JsonValue } from '../wire/json.ts';
export { PROTOCOL_REVISION } from '../wire/revision.ts';
// For the front ends: version, sandbox backends on this machine, the bootstrap file, type stripping.
export { VERSION, versionReport, type VersionReport } from './runtime/version.ts';
export { availableBackends } from './sandbox/index.ts';
export { readBootstrap } from './worker/bootstrap-asset.ts';
export { defaultBootstrapPath } from './worker/launch.ts';
export { stripTypes } from './execution/typescript.ts';
// Result JSON for the front ends, written without recursion: values may nest as deep as memory allows.
export { jsonText, type JsonTextOptions } from './runtime/json-text.ts';
// Tool schemas to the TypeScript declarations a model reads (used by `ptc serve` and `ptc mcp`).
export { declarations, bindingPaths, type ToolSchema, type DeclarationOptions } from './runtime/declarations.ts';
// Discovery: the index behind a program's search() and describe(), and the text a model reads past a budget.
export { toolCatalog, type ToolCatalog, type SearchOptions, type SearchMatch, type SearchResult } from './runtime/discovery/catalog.ts';
// Upstream text outside the declarations (an MCP upstream's failure) goes through the same escaping.
export { codeFence, lineComment } from './runtime/declaration-text.ts';
// What a model reads of a failed run, and an output image's media type: the same for every front end.
export { failureText, imageMediaType } from './runtime/model-text.ts';
// The runtime's own globals (inspect, Image, BindingError) as declarations.
export { PROGRAM_GLOBALS } from './runtime/program-globals.ts';
