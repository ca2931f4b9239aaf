// The resolved runtime configuration, as the execution layer consumes it; host/runtime/config.ts
// validates user input into this shape.
import type { SandboxOptions, SandboxPolicy } from '../sandbox/index.ts';
import type { LaunchConfig } from '../worker/launch.ts';
import type { ImportPolicy } from '../../wire/import-policy.ts';

/** The execution modes, named once: per-call, a fresh process per program (async function bodies); vm-script, Script programs; persistent-in-memory, a REPL retained per owner. */
export const EXECUTION_MODES = ['per-call', 'vm-script', 'persistent-in-memory'] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];
/** The modes whose environments outlive a run: what `ptc repl` offers, the default first. */
export const RETAINED_MODES = ['persistent-in-memory', 'vm-script'] as const satisfies readonly ExecutionMode[];
export type RetainedMode = (typeof RETAINED_MODES)[number];

/** Something the host noticed outside any run, with the state owner it concerns. */
export interface RuntimeDiagnostic {
  /** 'environment-lost': the owner's retained environment died while idle (its process exited, went over a limit, or broke the protocol); its next run starts fresh and says so in `environment.replaced`. */
  type: 'environment-lost';
  owner: object;
  message: string;
}

export interface ResolvedConfig {
  executionMode: ExecutionMode;
  scriptPersistence: boolean;
  replScoped: boolean;
  timeoutMs: number;
  maxTimeoutMs: number;
  maxOutputBytes: number;
  maxOldGenerationSizeMb: number;
  /** Default CPU budget of a run, ms; null for none. */
  cpuTimeMs: number | null;
  /** Resident memory limit of a carrier's process tree, MiB; null for none. */
  maxMemoryMb: number | null;
  /** What the carrier's tree may write to disk, MiB; null for no limit. */
  maxDiskMb: number | null;
  maxMessageBytes: number;
  maxPendingCalls: number;
  stopGraceMs: number;
  graceMs: number;
  launch: LaunchConfig | undefined;
  prestartCarrier: boolean;
  /** Programs have `search` and `describe` over the run's tools. */
  discovery: boolean;
  /** Receives what the host notices outside any run. */
  onDiagnostic?: (diagnostic: RuntimeDiagnostic) => void;
  /** The warm pool's bounds (used when prestartCarrier is true). */
  pool: { min: number; max: number };
  sandbox: Omit<SandboxOptions, 'carrierNodeVersion'>;
  policy: SandboxPolicy;
  /** Release a retained environment idle this long; undefined: never. */
  idleTimeoutMs?: number;
  /** Retained environments kept at once; undefined: no limit. */
  maxRetainedEnvironments?: number;
  /** The import policy every run carries to its carrier; undefined: none. */
  imports?: ImportPolicy;
  approval: { required?: (call: { binding: string; args: unknown[] }) => boolean; timeoutMs: number; deadline: 'paused' | 'running' };
  /** The journal file, absolute; undefined: none. */
  journal?: string;
}
