// `node bootstrap.mjs --probe`: what this machine offers a carrier, as one JSON line, so the host
// can choose the sandbox backend for a remote run the way it does for a local one. bubblewrap is
// tried with the namespaces and mounts a launch uses, as host/sandbox/detect.ts does locally.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { PROTOCOL_REVISION } from '../protocol/revision.ts';

export interface ProbeReport {
  revision: number;
  node: string;
  bwrapPath: string;
  /** Why bubblewrap cannot confine a carrier here; absent when it can. */
  bwrapUnavailable?: string;
}

const PROBE_ARGS = [
  '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp',
  '--unshare-pid', '--unshare-net', '--unshare-ipc', '--cap-drop', 'ALL', '--die-with-parent', '--new-session',
  '--', 'true',
];

/** Prints this machine's ProbeReport on stdout, for the configured bubblewrap or the one on PATH. */
export function runProbe(configuredBwrap?: string): void {
  const bwrapPath = configuredBwrap ?? locate('bwrap') ?? '/usr/bin/bwrap';
  const report: ProbeReport = { revision: PROTOCOL_REVISION, node: process.version, bwrapPath };
  const unavailable = bwrapProblem(bwrapPath);
  if (unavailable !== undefined) report.bwrapUnavailable = unavailable;
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

function bwrapProblem(path: string): string | undefined {
  if (!isExecutable(path)) return `bubblewrap is not installed (${path} not found)`;
  const result = spawnSync(path, PROBE_ARGS, { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'ignore', 'pipe'] });
  if (result.status === 0) return undefined;
  const detail = (result.stderr ?? '').trim().slice(0, 2_000) || (result.error?.message ?? `exit code ${result.status}`);
  return `bubblewrap at ${path} cannot create a sandbox here: ${detail}`;
}

function locate(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
