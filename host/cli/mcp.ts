// `ptc mcp`: its flags here; the server itself (and the MCP SDK) loads only when the command runs,
// so `ptc run` never pays for it.
import type { Argv } from 'yargs';
import { applyFlags, limitOptions, sandboxOptions, UsageError, type RunArgs } from './options.ts';
import { applyRetentionFlags, retentionOptions } from './retention-flags.ts';

export function mcpOptions(command: Argv): Argv {
  command
    .option('config', { type: 'string', demandOption: true, describe: 'JSON file: {"mcpServers": {name: {command, args, env, cwd} | {url, headers}}, "ptc"?: runtime config}' })
    .option('mode', { type: 'string', choices: ['per-call', 'vm-script', 'persistent-in-memory'], describe: 'Execution mode; persistent-in-memory keeps one environment per MCP session and adds a reset tool' });
  sandboxOptions(command);
  retentionOptions(command, (field) => `ptc.${field}`);
  return limitOptions(command, (_flag, field) => `Overrides ptc.${field}`);
}

export async function mcpCommand(args: RunArgs & { config: string }): Promise<number> {
  const { serveMcp, McpConfigError } = await import('../mcp/command.ts');
  try {
    return await serveMcp(args.config, (ptc) => applyFlags(applyRetentionFlags({ ...ptc }, args), args));
  } catch (error) {
    if (error instanceof McpConfigError) throw new UsageError(error.message, { cause: error });
    throw error;
  }
}
