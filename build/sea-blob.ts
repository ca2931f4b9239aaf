// Making a SEA preparation blob with a given Node. The blob for the building machine's own
// platform follows sea-config.json (code cache on); a blob for another platform is made with no
// code cache and no snapshot, because V8's cache and snapshot are only valid on the platform and
// architecture that made them (Node's SEA docs say so for cross-platform blobs).

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { BuildError } from './errors.ts';

export interface SeaConfig {
  main: string;
  output: string;
  useCodeCache?: boolean;
  useSnapshot?: boolean;
  assets?: Record<string, string>;
}

export function readSeaConfig(file: string): SeaConfig {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as SeaConfig;
  } catch (err) {
    throw new BuildError(`cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Runs `node --experimental-sea-config` in `root` for `config`; returns the blob's path. */
export function makeSeaBlob(node: string, root: string, config: SeaConfig): string {
  for (const [name, file] of Object.entries(config.assets ?? {})) {
    if (!existsSync(resolve(root, file))) throw new BuildError(`SEA asset ${name}: ${file} does not exist`);
  }
  const blob = resolve(root, config.output);
  rmSync(blob, { force: true });
  // Node reads the configuration from a file; paths in it are relative to the cwd (root).
  const configFile = join(root, 'dist', `sea-config.${relative(join(root, 'dist'), blob).replace(/[\\/]/g, '_')}.json`);
  writeFileSync(configFile, JSON.stringify(config));
  try {
    execFileSync(node, ['--experimental-sea-config', configFile], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: Buffer; stdout?: Buffer; message: string };
    throw new BuildError(`making the SEA blob failed: ${String(e.stderr ?? '') || String(e.stdout ?? '') || e.message}`.trim(), { cause: err });
  } finally {
    rmSync(configFile, { force: true });
  }
  if (!existsSync(blob)) throw new BuildError(`the SEA blob ${config.output} was not written`);
  return blob;
}
