// What the hostile suites check after each attack: nothing left running in the workspace, nothing
// left in the temp root. Importing this module points TMPDIR at a private temp root, so every
// temp entry a run makes (private sandbox dirs, the compile cache) can be counted without seeing
// other suites' files; import it before anything starts a carrier.
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { RunResult } from '../../host/index.ts';

export const TEMP_ROOT = mkdtempSync(join(realpathSync('/tmp'), `ptc-hostile-${process.pid}-`));
process.env.TMPDIR = TEMP_ROOT;

export const BACKENDS = ['bwrap', 'node-permission'] as const;
export type Backend = (typeof BACKENDS)[number];
export type Failure = Extract<RunResult, { status: 'failed' }>['failure'];

/** A fresh workspace directory under the temp root. */
export function workspace(): string {
  return mkdtempSync(join(TEMP_ROOT, 'ws-'));
}

/** Live processes whose working directory is `ws` or inside it: anything a run left behind there. */
export function processesIn(ws: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]![0];
      if ((cwd === ws || cwd.startsWith(`${ws}/`)) && state !== 'Z') found.push(`${entry} ${readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ')}`);
    } catch {
      // gone, or not ours to look at
    }
  }
  return found;
}

/** Entries in the temp root besides the workspaces and Node's compile cache (kept on purpose
 * between carriers); this process's own host directory counts only by what is left inside it. */
export function tempLeftovers(): string[] {
  const own = `ptc-${process.getuid?.() ?? 'user'}-${process.pid}-`;
  return readdirSync(TEMP_ROOT)
    .filter((name) => !name.startsWith('ws-') && !name.startsWith('ptc-compile-cache-'))
    .flatMap((name) => (name.startsWith(own) ? readdirSync(join(TEMP_ROOT, name)).map((inner) => `${name}/${inner}`) : [name]));
}

/** Removes the temp root; for test.after. */
export function removeTempRoot(): void {
  rmSync(TEMP_ROOT, { recursive: true, force: true });
}
