// `ptc mcp`: its flags here; the server itself (and the MCP SDK) loads only when the command runs,
// so `ptc run` never pays for it.
import type { Argv } from 'yargs';
import { EXECUTION_MODES } from '../modes.ts';
import { applyFlags, limitOptions, numberFlag, sandboxOptions, UsageError, type RunArgs } from './options.ts';
import { applyRetentionFlags, retentionOptions } from './retention-flags.ts';

export function mcpOptions(command: Argv): Argv {
  command
    .option('config', { type: 'string', demandOption: true, describe: 'JSON file: {"mcpServers": {name: {command, args, env, cwd} | {url, headers}}, "ptc"?: runtime config}' })
    .option('mode', { type: 'string', choices: EXECUTION_MODES, describe: 'Execution mode; persistent-in-memory keeps one environment per MCP session and adds a reset tool' })
    .option('description-budget', { type: 'string', requiresArg: true, describe: 'Characters the run_code description may take (default 40000); past it, it lists the namespaces and programs find tools with search() and describe() (overrides ptc.descriptionBudget)' });
  sandboxOptions(command);
  retentionOptions(command, (field) => `ptc.${field}`);
  return limitOptions(command, (_flag, field) => `Overrides ptc.${field}`);
}

export async function mcpCommand(args: RunArgs & { config: string }): Promise<number> {
  const { serveMcp, McpConfigError } = await import('../mcp/command.ts');
  const budget = numberFlag(args as unknown as Record<string, unknown>, 'description-budget');
  try {
    return await serveMcp(args.config, (ptc) => applyFlags(applyRetentionFlags({ ...ptc }, args), args), budget);
  } catch (error) {
    if (error instanceof McpConfigError) throw new UsageError(error.message, { cause: error });
    throw error;
  }
}
