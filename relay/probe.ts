// `node bootstrap.mjs --probe`: what this machine offers a carrier, as one JSON line, so the host
// can choose the sandbox backend for a remote run the way it does for a local one. bubblewrap is
// found and tried as host/sandbox/detect.ts does locally (protocol/bwrap-probe.ts), without PATH.
import { spawnSync } from 'node:child_process';
import { bwrapProbeArgs, isExecutableFile, locateBwrap } from '../supervision/bwrap-probe.ts';
import { PROTOCOL_REVISION } from '../wire/revision.ts';
import { seccompFilter, seccompUnavailable } from '../supervision/seccomp.ts';
import { bwrapCommand, privateMountPrefix } from '../supervision/private-mounts.ts';

export interface ProbeReport {
  revision: number;
  node: string;
  bwrapPath: string;
  /** Why bubblewrap cannot confine a carrier here; absent when it can. */
  bwrapUnavailable?: string;
}

/** Prints this machine's ProbeReport on stdout, for the configured bubblewrap or the one found here. */
export function runProbe(configuredBwrap?: string): void {
  const bwrapPath = locateBwrap(configuredBwrap);
  const report: ProbeReport = { revision: PROTOCOL_REVISION, node: process.version, bwrapPath };
  const unavailable = bwrapProblem(bwrapPath);
  if (unavailable !== undefined) report.bwrapUnavailable = unavailable;
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

function bwrapProblem(path: string): string | undefined {
  if (process.platform !== 'linux') return `bubblewrap needs Linux; this is ${process.platform}`;
  const filter = seccompFilter();
  if (filter === undefined) return seccompUnavailable();
  if (!isExecutableFile(path)) return `bubblewrap is not installed (${path} not found)`;
  // spawnSync writes only to stdin, so here bwrap reads the filter from fd 0 (the probe reads no input).
  // Through the same private mount namespace as launches (supervision/private-mounts.ts).
  const { executable, args } = bwrapCommand(path, bwrapProbeArgs(path, 0), privateMountPrefix());
  const result = spawnSync(executable, args, { encoding: 'utf8', timeout: 10_000, stdio: ['pipe', 'ignore', 'pipe'], input: filter, env: {} });
  if (result.status === 0) return undefined;
  const detail = (result.stderr ?? '').trim().slice(0, 2_000) || (result.error?.message ?? `exit code ${result.status}`);
  return `bubblewrap at ${path} cannot create a sandbox here: ${detail}`;
}
