// The process entry's head start: a carrier booting while the CLI's own modules load. Imports
// are dynamic so that this module costs nothing before the spawn.
import { bootMark } from '../../wire/boot-mark.ts';

/**
 * For `ptc run`: boots the default carrier before the CLI's own modules load, so the two start-ups
 * overlap. A run whose flags change the launch, limits or policy simply starts its own carrier.
 */
export async function prestartForCli(argv: string[]): Promise<void> {
  // Flags that change the carrier's shape would make the early carrier a wasted process.
  const reshaping = ['--node', '--config', '--max-old-generation-size-mb', '--max-message-bytes', '--help', '--sandbox', '--allow-network', '--allow-host', '--deny-host', '--writable-root', '--sandbox-backend', '--require-enforcement', '--cwd', '--remote', '--map-import', '--import-handler'];
  if (argv[0] !== 'run' || argv.some((arg) => reshaping.some((flag) => arg === flag || arg.startsWith(`${flag}=`)))) return;
  const [{ confine, DEFAULT_POLICY }, { prestart }, { resolveConfig }] = await Promise.all([import('../worker/confinement.ts'), import('../worker/pool.ts'), import('./config.ts')]);
  const confinement = await confine(resolveConfig({}), DEFAULT_POLICY, process.cwd()).catch(() => undefined);
  bootMark('ptc:sandbox');
  if (confinement !== undefined && 'recipe' in confinement) prestart(confinement.recipe);
  bootMark('ptc:spawned');
}
