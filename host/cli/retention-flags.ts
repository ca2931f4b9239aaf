// The retention limits as flags of the long-lived front ends (`ptc serve`, `ptc mcp`), which keep
// environments for many owners; `ptc run` and `ptc repl` hold at most one, so they have none.
import type { Argv } from 'yargs';
import { numberFlag } from './options.ts';

const RETENTION_FLAGS = {
  'idle-timeout-ms': ['idleTimeoutMs', 'Release an owner\'s retained environment after this many ms without a run'],
  'max-retained-environments': ['maxRetainedEnvironments', 'Retained environments kept at once; past it the least recently used idle one is released'],
} as const;

/** Declares the flags; strings, so that a value that is not a number is quoted as typed. */
export function retentionOptions(command: Argv, field: (name: string) => string = (name) => name): Argv {
  for (const [flag, [name, describe]] of Object.entries(RETENTION_FLAGS)) {
    command.option(flag, { type: 'string', requiresArg: true, describe: `${describe} (a number; overrides ${field(name)})` });
  }
  return command;
}

/** Lays the flags given over `config`; the runtime validates the values. */
export function applyRetentionFlags<T extends object>(config: T, args: Record<string, unknown>): T {
  for (const [flag, [name]] of Object.entries(RETENTION_FLAGS)) {
    const value = numberFlag(args, flag);
    if (value !== undefined) (config as Record<string, unknown>)[name] = value;
  }
  return config;
}
