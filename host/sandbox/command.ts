// The command that starts a carrier, as the worker builds it and the sandbox wraps it.
export interface LaunchCommand {
  executable: string;
  args: string[];
  env: Record<string, string>;
  /** What started it, for diagnostics and the version report. */
  kind: 'embedded' | 'node-script' | 'source';
  /** Directories the launch reads besides its executable and arguments (a sandbox must expose them). */
  readable?: string[];
  /** bubblewrap's seccomp filter, which the spawn hands over on SECCOMP_FD (supervision/seccomp-fd.ts). */
  seccompFilter?: Uint8Array;
}
