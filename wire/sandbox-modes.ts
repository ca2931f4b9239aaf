// The sandbox's file policies, named once. The host validates a policy's mode against them and
// offers them on the command line; a confined one travels to a relay in its start message
// (mux.ts), and both sides' bubblewrap argv follow it (supervision/bwrap.ts).

/** Every file policy: read-only writes only the private temp directory; workspace-write also the workspace and writable roots; full-access has no file rules. */
export const SANDBOX_MODES = ['read-only', 'workspace-write', 'full-access'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];
/** The modes a sandbox enforces: full-access runs unconfined. */
export type ConfinedMode = Exclude<SandboxMode, 'full-access'>;
/** The mode of runs that name no policy: the cwd is the workspace, writable. */
export const DEFAULT_SANDBOX_MODE: SandboxMode = 'workspace-write';
