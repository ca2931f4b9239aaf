// The modes the front ends offer (--mode, --sandbox) and the default policy's, for the CLI's
// --help and its checks: a public entry of its own beside index.ts, so that the CLI lists them
// without loading the library. Each list is defined once, where the layer that acts on it lives.
export { EXECUTION_MODES, RETAINED_MODES, type ExecutionMode, type RetainedMode } from './execution/settings.ts';
export { DEFAULT_SANDBOX_MODE, SANDBOX_MODES, type SandboxMode } from '../wire/sandbox-modes.ts';
