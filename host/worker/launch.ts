// How a carrier process is started: the embedded binary re-executing itself, a Node running the
// bootstrap file, or (from source) this Node running bootstrap/main.ts; or on another machine, over
// ssh or a command prefix, through the relay (transports/). For a local launch the environment is
// built from scratch: PATH and temp paths only, plus the selector and heap flag the launch needs.
import { isSea } from 'node:sea';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CARRIER_SELECTOR } from '../../wire/revision.ts';
import { cacheDirectory, makePrivateDirectory, type LaunchCommand } from '../sandbox/index.ts';
import type { SshLaunch } from './transports/ssh.ts';
import type { CommandLaunch } from './transports/command.ts';

export type { LaunchCommand, SshLaunch, CommandLaunch };

/** A carrier on this machine: this binary re-executing itself, or a Node running the bootstrap file. */
export type LocalLaunch =
  | { kind: 'embedded'; executable?: string }
  | { kind: 'node-script'; executable: string; bootstrapPath?: string };

/** A carrier on another machine, behind the relay. */
export type RemoteLaunch = SshLaunch | CommandLaunch;

/** How carriers start. */
export type LaunchConfig = LocalLaunch | RemoteLaunch;

/** True for the launches that run the carrier elsewhere. */
export function isRemoteLaunch(launch: LaunchConfig | undefined): launch is RemoteLaunch {
  return launch?.kind === 'ssh' || launch?.kind === 'command';
}


const KEPT_ENV = ['PATH', 'TMPDIR', 'TMP', 'TEMP'];
/** Windows processes need these from any parent: without SystemRoot, Winsock cannot load its
 * providers (WSAStartup fails with WSAEPROVIDERFAILEDINIT), so a program could not use the network. */
const KEPT_ENV_WINDOWS = ['SystemRoot', 'SystemDrive', 'windir', 'PATHEXT', 'ComSpec'];

/** The host variables a local carrier inherits on `platform`. */
export function keptEnvironment(platform: NodeJS.Platform = process.platform): string[] {
  return platform === 'win32' ? [...KEPT_ENV, ...KEPT_ENV_WINDOWS] : KEPT_ENV;
}

/** The launch used when the configuration names none: this binary, or bootstrap/main.ts from source. */
export function defaultLaunch(): LocalLaunch | { kind: 'source' } {
  return isSea() ? { kind: 'embedded', executable: process.execPath } : { kind: 'source' };
}

/** Builds argv and environment for one carrier with the given heap limit; `readable` are files it must be able to read (an import policy's). */
export function launchCommand(launch: LocalLaunch | undefined, maxOldGenerationSizeMb: number, readable: string[] = []): LaunchCommand {
  const chosen = launch ?? defaultLaunch();
  const env: Record<string, string> = {};
  for (const name of keptEnvironment()) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  // The reference's node-script and embedded launches enable VM modules: an import policy's
  // handler meets vm.Script imports through a callback that needs the flag.
  const heap = `--max-old-space-size=${maxOldGenerationSizeMb}`;
  const vmModules = '--experimental-vm-modules';
  // An interrupt (carrier/run/interrupt.ts) that lands in a program's timer callback leaves Node's
  // async-id stack one level deep; the check would abort the carrier for it. (A program that enables
  // async_hooks turns the check back on: then such an interrupt ends the carrier, as a kill would.)
  const hookChecks = '--no-force-async-hooks-checks';
  switch (chosen.kind) {
    case 'embedded':
      // A single-executable app treats argv as its own; Node options reach it through NODE_OPTIONS.
      return {
        kind: 'embedded',
        executable: chosen.executable ?? process.execPath,
        args: [],
        env: { ...env, [CARRIER_SELECTOR]: '1', NODE_OPTIONS: `${heap} ${vmModules} ${hookChecks}` },
        readable,
      };
    case 'node-script':
      return {
        kind: 'node-script',
        executable: chosen.executable,
        args: [heap, vmModules, hookChecks, chosen.bootstrapPath ?? defaultBootstrapPath()],
        env,
        readable,
      };
    case 'source': {
      // Stripping the carrier's TypeScript costs ~150 ms a start; Node's compile cache keeps the
      // stripped and compiled code between carriers. Node runs whatever code it finds there, so the
      // cache is only used in a directory private to this user (never a shared /tmp path another
      // user could make first); without one, carriers start without it.
      const cache = join(cacheDirectory(), 'compile-cache');
      return {
        kind: 'source',
        executable: process.execPath,
        args: [heap, vmModules, hookChecks, carrierSourcePath()],
        env: privateCompileCache(cache) ? { ...env, NODE_COMPILE_CACHE: cache } : env,
        // The carrier imports its sibling modules and node_modules from the checkout (the
        // installed package's carrier is one file, which the sandbox exposes as an argument).
        // node_modules by its real path: in a worktree it is a link elsewhere, which the sandbox's
        // fresh root would not otherwise hold.
        readable: typeof PTC_PACKAGE_CARRIER === 'string' ? readable : [fileURLToPath(new URL('../..', import.meta.url)), fileURLToPath(new URL('../../node_modules', import.meta.url)), ...readable],
      };
    }
  }
}

/**
 * Compile-cache directories found private in this process. Once this user's directory is private,
 * only this user or root can change that, so it is checked once rather than on every run (the
 * check stats each component of the path; a retained environment's run asks for a launch each
 * time). A directory that is not private is asked again: it may have been made since.
 */
const privateCaches = new Set<string>();

function privateCompileCache(dir: string): boolean {
  if (privateCaches.has(dir)) return true;
  if (!makePrivateDirectory(dir)) return false;
  privateCaches.add(dir);
  return true;
}

/** The bootstrap shipped next to the binary (dist/bootstrap.mjs), or the carrier source. */
export function defaultBootstrapPath(): string {
  return isSea() ? join(dirname(process.execPath), 'bootstrap.mjs') : carrierSourcePath();
}

/**
 * Defined by build/library.ts in the installed package: its carrier, the bundled bootstrap, as a
 * path relative to the bundled library. Node strips no types under node_modules, so there the
 * carrier cannot be bootstrap/main.ts.
 */
declare const PTC_PACKAGE_CARRIER: string | undefined;

let sourcePath: string | undefined;

function carrierSourcePath(): string {
  const entry = typeof PTC_PACKAGE_CARRIER === 'string' ? PTC_PACKAGE_CARRIER : '../../bootstrap/main.ts';
  return (sourcePath ??= fileURLToPath(new URL(entry, import.meta.url)));
}
