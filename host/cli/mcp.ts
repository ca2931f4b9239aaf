// `ptc mcp`: its flags here; the server itself (and the MCP SDK) loads only when the command runs,
// so `ptc run` never pays for it.
import { resolve } from 'node:path';
import { stat } from 'node:fs/promises';
import type { Argv } from 'yargs';
import { EXECUTION_MODES } from '../modes.ts';
import { applyFlags, limitOptions, numberFlag, sandboxOptions, UsageError, type RunArgs } from './options.ts';
import { applyRetentionFlags, retentionOptions } from './retention-flags.ts';

/** The environment variable that holds the bearer token of `ptc mcp --http`, kept off the command line (and out of `ps`). */
export const TOKEN_ENV = 'PTC_MCP_TOKEN';

export function mcpOptions(command: Argv): Argv {
  command
    .option('config', { type: 'string', demandOption: true, describe: 'JSON file: {"mcpServers": {name: {command, args, env, cwd} | {url, headers}}, "ptc"?: runtime config}' })
    .option('mode', { type: 'string', choices: EXECUTION_MODES, describe: 'Execution mode; persistent-in-memory keeps one environment per MCP session and adds a reset tool' })
    .option('cwd', { type: 'string', requiresArg: true, describe: 'Directory programs run in, and their workspace (default: the directory ptc mcp starts in)' })
    .option('http', { type: 'string', requiresArg: true, describe: 'Serve MCP over Streamable HTTP at http://HOST:PORT/mcp instead of stdio: PORT (on 127.0.0.1) or HOST:PORT; a non-loopback HOST needs a token' })
    .option('token', { type: 'string', requiresArg: true, describe: `Bearer token every --http request must carry (prefer the ${TOKEN_ENV} environment variable, which ps does not show)` })
    .option('session-idle-ms', { type: 'string', requiresArg: true, describe: 'With --http: close a session that has had no request in flight for this long (default 1800000, 30 minutes), with its upstreams' })
    .option('print-description', { type: 'boolean', describe: 'Print the run_code description (guidance and the upstream tools\' declarations) as a client would see it, and exit' })
    .option('description-budget', { type: 'string', requiresArg: true, describe: 'Characters the run_code description may take (default 40000); past it, it lists the namespaces and programs find tools with search() and describe() (overrides ptc.descriptionBudget)' });
  sandboxOptions(command);
  retentionOptions(command, (field) => `ptc.${field}`);
  return limitOptions(command, (_flag, field) => `Overrides ptc.${field}`);
}

export async function mcpCommand(args: RunArgs & { config: string; http?: string; token?: string; 'print-description'?: boolean }): Promise<number> {
  const { serveMcp, parseListen, McpConfigError } = await import('../mcp/command.ts');
  const budget = numberFlag(args as unknown as Record<string, unknown>, 'description-budget');
  const sessionIdleMs = numberFlag(args as unknown as Record<string, unknown>, 'session-idle-ms');
  try {
    for (const flag of ['cwd', 'http', 'token', 'session-idle-ms'] as const) {
      const value = args[flag];
      if (Array.isArray(value)) throw new UsageError(`--${flag} takes one value, got ${value.length}`);
    }
    const cwd = args.cwd === undefined ? undefined : await directory(args.cwd);
    const token = args.token ?? process.env[TOKEN_ENV];
    if (token !== undefined && token.length < 16) throw new UsageError(`the bearer token (--token or ${TOKEN_ENV}) must be at least 16 characters, got ${token.length}`);
    if (token !== undefined && args.http === undefined) throw new UsageError(`--token (or ${TOKEN_ENV}) is for --http; over stdio the client that starts ptc mcp is the only one`);
    if (args.http !== undefined && args['print-description'] === true) throw new UsageError('--print-description prints and exits; it cannot be combined with --http');
    const http = args.http === undefined ? undefined : parseListen(String(args.http));
    if (sessionIdleMs !== undefined && (!Number.isSafeInteger(sessionIdleMs) || sessionIdleMs <= 0 || sessionIdleMs > 2 ** 31 - 1)) throw new UsageError(`--session-idle-ms must be a positive integer of ms, at most ${2 ** 31 - 1}, got ${sessionIdleMs}`);
    if (sessionIdleMs !== undefined && http === undefined) throw new UsageError('--session-idle-ms is for --http sessions');
    return await serveMcp(args.config, (ptc) => applyFlags(applyRetentionFlags({ ...ptc }, args), args), {
      ...(budget !== undefined ? { descriptionBudget: budget } : {}),
      ...(cwd !== undefined ? { cwd } : {}),
      ...(http !== undefined ? { http } : {}),
      ...(token !== undefined ? { token } : {}),
      ...(sessionIdleMs !== undefined ? { sessionIdleMs } : {}),
      ...(args['print-description'] === true ? { printDescription: true } : {}),
    });
  } catch (error) {
    if (error instanceof McpConfigError) throw new UsageError(error.message, { cause: error });
    throw error;
  }
}

async function directory(dir: string): Promise<string> {
  const info = await stat(dir).catch(() => undefined);
  if (info === undefined) throw new UsageError(`--cwd ${JSON.stringify(dir)}: no such directory`);
  if (!info.isDirectory()) throw new UsageError(`--cwd ${JSON.stringify(dir)}: not a directory`);
  return resolve(dir);
}
