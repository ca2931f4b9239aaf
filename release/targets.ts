// The platforms a release builds for: each is the registry's Node package of that name at the
// pinned version (release/node-packages.json) with the ptc blob injected.

import type { ExecutableKind } from '../build/executable-format.ts';

export interface Target {
  /** Platform id in file names, e.g. `linux-arm64`. */
  id: string;
  /** The registry's Node package for it. */
  pkg: string;
  /** Where the Node binary is inside that package's tarball. */
  nodeInTarball: string;
  kind: ExecutableKind;
  /** The release file's name for ptc `version`. */
  file: (version: string) => string;
}

const target = (id: string, kind: ExecutableKind, exe = ''): Target => ({
  id,
  pkg: `node-${id}`,
  nodeInTarball: `package/bin/node${exe}`,
  kind,
  file: (version) => `ptc-${version}-${id}${exe}`,
});

export const TARGETS: readonly Target[] = [
  target('linux-x64', { format: 'elf', arch: 'x64' }),
  target('linux-arm64', { format: 'elf', arch: 'arm64' }),
  target('darwin-x64', { format: 'macho', arch: 'x64' }),
  target('win-x64', { format: 'pe', arch: 'x64' }, '.exe'),
];

/** The target this machine's own Node package is for, if it is one of TARGETS. */
export function hostTarget(): Target | undefined {
  return TARGETS.find((t) => t.id === `${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`);
}
