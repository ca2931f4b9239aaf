// Flags and inputs that `run` and `repl` share: limits, confinement, launch, config file and
// bindings module, turned into a RuntimeConfig and Bindings. Problems are UsageErrors (exit 2).
import { constants as fsConstants } from 'node:fs';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';
import type { Argv } from 'yargs';
import type { RuntimeConfig } from '../index.ts';
import { DEFAULT_SANDBOX_MODE, SANDBOX_MODES } from '../modes.ts';

import { UsageError } from './usage-error.ts';
import { applyImportFlags, importOptions } from './import-flags.ts';
import { LIMIT_FLAGS } from './limit-flags.ts';

// Loaded by the flags that read files: `ptc --version` and `--help` need none of it.
const files = () => import('node:fs/promises');

export { UsageError };

/** An error's message for a "ptc: " line: the library's own "ptc config:" style prefix is dropped, one "ptc:" is enough. */
export function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/^ptc (?=[a-z])/, '');
}

/** The one line `ptc` prints for a usage or configuration error, whatever raised it: yargs' own messages span lines ("Invalid values:\n  Argument:"). */
export function usageLine(error: unknown): string {
  return `ptc: ${messageOf(error).replace(/\s*\n\s*/g, ' ')}\n`;
}

export { LIMIT_FLAGS };

export interface RunArgs {
  file?: string;
  json: boolean;
  bindings?: string;
  config?: string;
  cwd?: string;
  node?: string;
  bootstrap?: string;
  mode?: string;
  sandbox?: string;
  'allow-network'?: boolean;
  'allow-host'?: string[];
  'deny-host'?: string[];
  'writable-root'?: string[];
  'sandbox-backend'?: string;
  'require-enforcement'?: string;
  'discard-completion': boolean;
  remote?: string;
  'ssh-arg'?: string[];
  'remote-node'?: string;
  'remote-bootstrap'?: string;
  [flag: string]: unknown;
}

/** The confinement flags `run` and `repl` share. */
export function sandboxOptions(command: Argv): Argv {
  command
    .option('sandbox', { type: 'string', choices: SANDBOX_MODES, describe: `File policy (default ${DEFAULT_SANDBOX_MODE}: the cwd is writable)` })
    .option('allow-network', { type: 'boolean', describe: 'Let the program use the network (off by default when confined)' })
    // nargs: 1 keeps a repeatable flag to one value, so `--allow-host x program.ts` leaves the file as the program.
    .option('allow-host', { type: 'string', array: true, nargs: 1, requiresArg: true, describe: 'Let the program reach only these destinations, through the host\'s proxy (repeatable): api.example.com, \'*.example.org:443\', 10.1.2.3, 192.168.0.0/16:5432 (bubblewrap only)' })
    .option('deny-host', { type: 'string', array: true, nargs: 1, requiresArg: true, describe: 'Refuse these destinations even when --allow-host allows them (repeatable; deny beats allow)' })
    .option('writable-root', { type: 'string', array: true, nargs: 1, describe: 'Another writable directory (repeatable; workspace-write)' })
    .option('sandbox-backend', { type: 'string', choices: ['auto', 'bwrap', 'node-permission', 'none'], describe: 'Confinement backend (default auto: bubblewrap, else Node\'s permission model)' })
    .option('require-enforcement', { type: 'string', choices: ['full', 'partial', 'none'], describe: 'Fail with sandbox-unavailable unless at least this much is enforced (default partial)' })
    // Where the carrier runs is part of its confinement: the far side's sandbox enforces the policy.
    .option('remote', { type: 'string', describe: 'Run programs on another machine over SSH: user@host, a Host alias, or ssh://user@host:port' })
    .option('ssh-arg', { type: 'string', array: true, nargs: 1, describe: 'An argument for ssh, before the destination (repeatable: --ssh-arg=-F --ssh-arg=./ssh_config)' })
    .option('remote-node', { type: 'string', describe: 'The Node on the remote machine (default: node on its PATH)' })
    .option('remote-bootstrap', { type: 'string', describe: 'A bootstrap.mjs installed on the remote machine (default: delivered to its ~/.cache/ptc)' });
  // What a program may import is confined too, by the carrier.
  return importOptions(command);
}

/** What the resource limits bound, for --help (the config table in the README words every field). */
const LIMIT_MEANINGS: Partial<Record<string, string>> = {
  cpuTimeMs: 'CPU time of one run, the carrier and every process it starts; over it the run fails as timeout',
  maxMemoryMb: 'resident memory of the carrier and every process it starts, plus the tmpfs and memfd files they hold, in MiB (at least 64); over it the run fails as worker-exit',
  maxDiskMb: 'what the carrier and every process it starts write to disk, in MiB (default 1024; null in --config for none); over it the run fails as worker-exit',
};

/**
 * The limit flags, one per numeric config field. They are declared as strings so that a value that
 * is not a number is quoted as typed (numberFlag); `describe` may word a field for its command.
 */
export function limitOptions(command: Argv, describe: (flag: string, field: string) => string = (_flag, field) => `Overrides config ${field}${LIMIT_MEANINGS[field] === undefined ? '' : `: ${LIMIT_MEANINGS[field]}`}`): Argv {
  for (const [flag, field] of Object.entries(LIMIT_FLAGS)) {
    command.option(flag, { type: 'string', requiresArg: true, describe: `${describe(flag, field)} (a number)` });
  }
  return command;
}

/** The allowlist --allow-host and --deny-host make, on top of one the config file names. */
function allowlistFlags(args: RunArgs, configured: unknown): { allow: string[]; deny: string[] } {
  if (args['allow-network'] !== undefined) throw new UsageError('--allow-network opens or closes the whole network; it cannot be combined with --allow-host or --deny-host');
  const existing = typeof configured === 'object' && configured !== null ? (configured as { allow?: unknown; deny?: unknown }) : undefined;
  const allow = args['allow-host']?.map(String) ?? (Array.isArray(existing?.allow) ? existing.allow : undefined);
  if (allow === undefined) throw new UsageError('--deny-host narrows an allowlist: give --allow-host too (or policy.network.allow in --config)');
  const deny = [...(Array.isArray(existing?.deny) ? existing.deny : []), ...(args['deny-host']?.map(String) ?? [])];
  return { allow, deny };
}

export async function loadConfig(args: RunArgs): Promise<RuntimeConfig> {
  refuseRepeatedFlags(args);
  // A remote run's cwd names a directory on the far machine.
  if (args.cwd !== undefined && args.remote === undefined) await checkDirectory(args.cwd);
  // One run per process: the carrier started by prestartDefaultCarrier (host/prestart.ts) is the only one worth having.
  let config: Record<string, unknown> = { prestartCarrier: false };
  if (args.config !== undefined) {
    let text: string;
    try {
      text = await (await files()).readFile(args.config, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read --config ${JSON.stringify(args.config)}: ${(error as Error).message}`);
    }
    try {
      config = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`--config ${JSON.stringify(args.config)} is not valid JSON: ${(error as Error).message}`);
    }
  }
  return applyFlags(config, args);
}

/** Flags that take one value: yargs makes an array of a repeated one, which no field accepts. */
const SINGLE_FLAGS = [
  ...Object.keys(LIMIT_FLAGS), 'config', 'bindings', 'cwd', 'mode', 'node', 'bootstrap', 'sandbox', 'sandbox-backend',
  'require-enforcement', 'remote', 'remote-node', 'remote-bootstrap', 'import-handler',
];

function refuseRepeatedFlags(args: RunArgs): void {
  for (const flag of SINGLE_FLAGS) {
    const value = args[flag];
    if (Array.isArray(value)) throw new UsageError(`--${flag} takes one value, got ${value.length}: ${value.map((item) => JSON.stringify(String(item))).join(', ')}`);
  }
}

/** Lays the limit, mode, sandbox and launch flags over a configuration read from elsewhere. */
export async function applyFlags(config: Record<string, unknown>, args: RunArgs): Promise<RuntimeConfig> {
  refuseRepeatedFlags(args);
  for (const [flag, field] of Object.entries(LIMIT_FLAGS)) {
    const value = numberFlag(args, flag);
    if (value !== undefined) config[field] = value;
  }
  if (args.mode !== undefined) config.executionMode = args.mode;
  applyImportFlags(config, args);
  const hosts = args['allow-host'] !== undefined || args['deny-host'] !== undefined;
  if (args.sandbox !== undefined || args['allow-network'] !== undefined || args['writable-root'] !== undefined || hosts) {
    const base = (config.policy ?? { mode: DEFAULT_SANDBOX_MODE }) as Record<string, unknown>;
    config.policy = {
      ...base,
      ...(args.sandbox !== undefined ? { mode: args.sandbox } : {}),
      ...(args['allow-network'] !== undefined ? { network: args['allow-network'] } : {}),
      ...(hosts ? { network: allowlistFlags(args, base.network) } : {}),
      ...(args['writable-root'] !== undefined ? { writableRoots: args['writable-root'] } : {}),
    };
  }
  if (args['sandbox-backend'] !== undefined || args['require-enforcement'] !== undefined) {
    config.sandbox = {
      ...((config.sandbox ?? {}) as Record<string, unknown>),
      ...(args['sandbox-backend'] !== undefined ? { backend: args['sandbox-backend'] } : {}),
      ...(args['require-enforcement'] !== undefined ? { require: args['require-enforcement'] } : {}),
    };
  }
  if (args.remote !== undefined) {
    if (args.node !== undefined || args.bootstrap !== undefined) throw new UsageError('--remote runs the carrier on the remote machine: use --remote-node and --remote-bootstrap there, not --node or --bootstrap');
    config.launch = {
      kind: 'ssh',
      destination: args.remote,
      ...(args['ssh-arg'] !== undefined ? { sshArgs: args['ssh-arg'].map(String) } : {}),
      ...(args['remote-node'] !== undefined ? { node: args['remote-node'] } : {}),
      ...(args['remote-bootstrap'] !== undefined ? { bootstrapPath: args['remote-bootstrap'] } : {}),
    };
  } else if (args['ssh-arg'] !== undefined || args['remote-node'] !== undefined || args['remote-bootstrap'] !== undefined) {
    throw new UsageError('--ssh-arg, --remote-node and --remote-bootstrap need --remote <destination>');
  } else if (args.node !== undefined) {
    await checkExecutable(args.node);
    const bootstrapPath = args.bootstrap !== undefined ? resolvePath(args.bootstrap) : undefined;
    await checkBootstrap(bootstrapPath ?? (await import('../index.ts')).defaultBootstrapPath(), bootstrapPath !== undefined);
    config.launch = { kind: 'node-script', executable: args.node, ...(bootstrapPath !== undefined ? { bootstrapPath } : {}) };
  } else if (args.bootstrap !== undefined) {
    throw new UsageError('--bootstrap needs --node <executable>');
  }
  return config as RuntimeConfig;
}

/**
 * A numeric flag as the user typed it. The flags are declared as strings: yargs turns text that is
 * not a number into NaN, and the message should quote what was typed.
 */
export function numberFlag(args: Record<string, unknown>, flag: string): number | undefined {
  const value = args[flag];
  if (value === undefined) return undefined;
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isFinite(number)) throw new UsageError(`--${flag} must be a number, got ${JSON.stringify(value)}`);
  return number;
}

// A --node or --bootstrap that cannot start a carrier is the user's typo, not a program failure:
// found here, it is named before any process starts instead of surfacing as a carrier's exit.
async function checkExecutable(executable: string): Promise<void> {
  const candidates = executable.includes('/') ? [resolvePath(executable)] : (process.env.PATH ?? '').split(delimiter).filter(isAbsolute).map((dir) => join(dir, executable));
  for (const candidate of candidates) {
    if (await isFile(candidate) && await accessible(candidate, fsConstants.X_OK)) return;
  }
  if (!executable.includes('/')) throw new UsageError(`--node ${JSON.stringify(executable)}: no executable of that name on PATH`);
  throw new UsageError(`--node ${JSON.stringify(executable)}: ${await isFile(candidates[0]!) ? 'the file is not executable' : 'no such file'}`);
}

// The cwd also becomes the sandbox's workspace root, whose own message would not name --cwd.
async function checkDirectory(dir: string): Promise<void> {
  const info = await (await files()).stat(dir).catch(() => undefined);
  if (info === undefined) throw new UsageError(`--cwd ${JSON.stringify(dir)}: no such directory`);
  if (!info.isDirectory()) throw new UsageError(`--cwd ${JSON.stringify(dir)}: not a directory`);
}

async function checkBootstrap(path: string, given: boolean): Promise<void> {
  if (await isFile(path) && await accessible(path, fsConstants.R_OK)) return;
  if (given) throw new UsageError(`--bootstrap ${JSON.stringify(path)}: no readable file there`);
  throw new UsageError(`--node needs a bootstrap file and there is none at ${JSON.stringify(path)}: pass --bootstrap <file> (write one with "ptc bootstrap --out <file>")`);
}

async function isFile(path: string): Promise<boolean> {
  return (await files()).stat(path).then((info) => info.isFile(), () => false);
}

async function accessible(path: string, mode: number): Promise<boolean> {
  return (await files()).access(path, mode).then(() => true, () => false);
}

export { loadBindings } from './bindings-module.ts';
