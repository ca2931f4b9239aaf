// Spare carriers: a fresh, never-used carrier started ahead of the next run, so a run does not
// wait for a Node process to boot. Every run still gets a process that has run no other code.
// Spares are keyed by everything that shapes a carrier at launch (executable, argv, environment,
// frame limit); an idle spare is unref'd so it never keeps the host alive, and it exits by itself
// when the host does, because its control channel closes.
import type { LaunchCommand } from './launch.ts';
import { Carrier, killGroup } from './worker.ts';

const spares = new Map<string, Carrier>();
const holders = new Map<string, number>();

function keyOf(command: LaunchCommand, maxMessageBytes: number): string {
  return JSON.stringify([command.executable, command.args, command.env, maxMessageBytes]);
}

/** Starts a spare for this launch unless one is already waiting. */
export function startSpare(command: LaunchCommand, maxMessageBytes: number): void {
  const key = keyOf(command, maxMessageBytes);
  const existing = spares.get(key);
  if (existing !== undefined && !existing.exited) return;
  const carrier = new Carrier({ command, cwd: '/', maxMessageBytes });
  carrier.unref();
  spares.set(key, carrier);
}

/** A carrier for one run: the waiting spare when it is alive, otherwise a new one. While any
 * runtime holds spares for this launch, a replacement starts booting at once. */
export function takeCarrier(command: LaunchCommand, maxMessageBytes: number, cwd: string): Carrier {
  const key = keyOf(command, maxMessageBytes);
  const spare = spares.get(key);
  spares.delete(key);
  let carrier: Carrier;
  if (spare !== undefined && !spare.exited) {
    spare.ref();
    carrier = spare;
  } else {
    if (spare !== undefined) void spare.terminate(0);
    carrier = new Carrier({ command, cwd, maxMessageBytes });
  }
  if ((holders.get(key) ?? 0) > 0) startSpare(command, maxMessageBytes);
  return carrier;
}

/** Declares interest in spares for a launch; the returned function withdraws it and stops the spare when no one else wants it. */
export function holdSpares(command: LaunchCommand, maxMessageBytes: number, graceMs: number): () => Promise<void> {
  const key = keyOf(command, maxMessageBytes);
  holders.set(key, (holders.get(key) ?? 0) + 1);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    const remaining = (holders.get(key) ?? 1) - 1;
    if (remaining > 0) {
      holders.set(key, remaining);
      return;
    }
    holders.delete(key);
    const spare = spares.get(key);
    spares.delete(key);
    await spare?.terminate(graceMs);
  };
}

// A host that exits normally takes its spares with it at once rather than leaving them to notice
// the closed channel.
process.once('exit', () => {
  for (const spare of spares.values()) killGroup(spare.pid);
});

/**
 * For `ptc run`: boots the default carrier before the CLI's own modules load, so the two start-ups
 * overlap. A run whose flags change the launch or limits simply starts its own carrier.
 */
export async function prestartForCli(argv: string[]): Promise<void> {
  // Flags that change the launch shape would make the early carrier a wasted process.
  const reshaping = ['--node', '--config', '--max-old-generation-size-mb', '--max-message-bytes', '--help'];
  if (argv[0] !== 'run' || argv.some((arg) => reshaping.some((flag) => arg === flag || arg.startsWith(`${flag}=`)))) return;
  const [{ launchCommand }, { DEFAULTS }] = await Promise.all([import('./launch.ts'), import('./config.ts')]);
  startSpare(launchCommand(undefined, DEFAULTS.maxOldGenerationSizeMb), DEFAULTS.maxMessageBytes);
}
