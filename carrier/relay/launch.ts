// The carrier command the relay runs on its machine, from the host's start frame: this Node running
// this bootstrap file, with the heap limit, under the backend the host chose from what this machine
// offers (bwrap, Node's permission model, or none). Policy paths are resolved here, where they live.
import { mkdtempSync, realpathSync, statSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { bwrapArgs, writablePaths, type ConfinedPolicy } from '../protocol/bwrap.ts';
import { permissionArgs, readableRoots } from '../protocol/node-permission.ts';
import type { RelayStart } from '../protocol/mux.ts';

export interface CarrierLaunch {
  executable: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** The carrier's private temp directory, removed by the relay once the carrier is gone. */
  privateTmp: string | undefined;
}

const KEPT_ENV = ['PATH', 'TMPDIR', 'TMP', 'TEMP'];
const TEMP_VARIABLES = ['TMPDIR', 'TMP', 'TEMP'];

/** Builds the command for `spec`; throws an Error naming the path or value that is wrong here. */
export function carrierLaunch(spec: RelayStart, bootstrapPath: string): CarrierLaunch {
  if (typeof spec !== 'object' || spec === null || !Number.isSafeInteger(spec.heapMb) || typeof spec.cwd !== 'string' || typeof spec.sandbox !== 'object' || spec.sandbox === null) {
    throw new Error(`invalid start frame: ${JSON.stringify(spec)}`);
  }
  const cwd = realDirectory(spec.cwd, 'working directory');
  const env: Record<string, string> = {};
  for (const name of KEPT_ENV) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  const node = process.execPath;
  const script = realpathSync(bootstrapPath);
  // As the host's local launches (host/worker/launch.ts): import handlers need VM modules.
  const heap = `--max-old-space-size=${spec.heapMb}`, vmModules = '--experimental-vm-modules';
  const sandbox = spec.sandbox;
  if (sandbox.backend === 'none') return { executable: node, args: [heap, vmModules, script], env, cwd, privateTmp: undefined };

  const policy: ConfinedPolicy = {
    mode: sandbox.mode,
    network: sandbox.backend === 'bwrap' ? sandbox.network : true,
    workspaceRoot: realDirectory(sandbox.workspaceRoot, 'workspaceRoot'),
    writableRoots: sandbox.writableRoots.map((root, index) => realDirectory(root, `writableRoots[${index}]`)),
  };
  const privateTmp = mkdtempSync(join(realpathSync(tmpdir()), 'ptc-sandbox-'));
  for (const name of TEMP_VARIABLES) env[name] = privateTmp;
  const writable = [...writablePaths(policy), privateTmp];
  if (sandbox.backend === 'node-permission') {
    return { executable: node, args: [...permissionArgs(sandbox.permissionFlag, writable, readableRoots(), { allowNet: sandbox.allowNet === true }), heap, vmModules, script], env, cwd, privateTmp };
  }
  const realNode = realpathSync(node);
  const args = [...bwrapArgs(policy, { privateTmp, launchPaths: [realNode, script], cwd }), '--', realNode, heap, vmModules, script];
  return { executable: sandbox.bwrapPath, args, env, cwd, privateTmp };
}

function realDirectory(path: string, what: string): string {
  if (typeof path !== 'string' || !isAbsolute(path)) throw new Error(`the ${what} must be an absolute path on ${hostname()}, got ${JSON.stringify(path)}`);
  let real: string;
  try {
    real = realpathSync(path);
  } catch (error) {
    throw new Error(`the ${what} ${path} does not exist on ${hostname()}: ${(error as Error).message}`, { cause: error });
  }
  if (!statSync(real).isDirectory()) throw new Error(`the ${what} ${path} on ${hostname()} is not a directory`);
  return real;
}
