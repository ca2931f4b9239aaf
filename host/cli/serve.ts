// `ptc serve`: the flags that shape its runtime (the same as `ptc run`'s), then the server on stdio
// (loaded when the command runs).
import type { Argv } from 'yargs';
import { createRuntime } from '../index.ts';
import { EXECUTION_MODES } from '../modes.ts';
import { limitOptions, loadConfig, messageOf, sandboxOptions, UsageError, type RunArgs } from './options.ts';
import { applyRetentionFlags, retentionOptions } from './retention-flags.ts';

export function serveOptions(command: Argv): Argv {
  command
    .option('config', { type: 'string', describe: 'JSON file with runtime configuration (initialize may add to it)' })
    .option('mode', { type: 'string', choices: EXECUTION_MODES, describe: 'Execution mode, which sets the program syntax' })
    .option('node', { type: 'string', describe: 'Run carriers with this Node executable (node-script launch)' })
    .option('bootstrap', { type: 'string', describe: 'Bootstrap file for --node (default: bootstrap.mjs next to ptc)' });
  sandboxOptions(command);
  retentionOptions(command, (field) => `config ${field}`);
  return limitOptions(command);
}

/** Serves JSON-RPC on stdin/stdout until stdin ends or the client sends shutdown; exit code 0. */
export async function serveCommand(args: RunArgs): Promise<number> {
  const config = applyRetentionFlags(await loadConfig(args), args);
  // A server runs many programs: unlike `ptc run`, it keeps a spare carrier booted for the next one.
  if (args.config === undefined) delete (config as { prestartCarrier?: boolean }).prestartCarrier;
  try {
    await createRuntime({ ...config, prestartCarrier: false }).dispose();
  } catch (error) {
    throw new UsageError(messageOf(error), { cause: error });
  }
  const stop = (): void => void process.stdin.destroy();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // Loaded only now: the server's modules would otherwise cost every `ptc run` start-up.
  const { serve } = await import('../serve/index.ts');
  try {
    await serve({ input: process.stdin, output: process.stdout, config });
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  }
  return 0;
}
