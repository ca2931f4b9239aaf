// `npm run release`: builds ptc for every platform the npm registry has a Node package for, into
// release/out/ (see release/README.md):
//
//   node release/build.ts [--entry FILE] [--bootstrap-entry FILE]
//
// 1. build/build.ts builds dist/ (the bundles, and dist/ptc for this machine with code cache).
// 2. The pinned Node makes one more blob from the same bundles with no code cache and no
//    snapshot: the blob for the other platforms (V8's cache is only valid where it was made).
// 3. For each other target, its Node package is fetched (release/fetch-node.ts) and the blob
//    injected into a copy (build/inject.ts).
// 4. The Python wheels (release/wheels.ts): the client alone, and the client with each binary.
// 5. bootstrap.mjs, RELEASE.md and SHA256SUMS (`sha256sum -c` format) go next to the binaries.

import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build, BuildError } from '../build/build.ts';
import { makeExecutable } from '../build/inject.ts';
import { pinnedNodeVersion, type PackageJson } from '../build/node-pin.ts';
import { makeSeaBlob, readSeaConfig } from '../build/sea-blob.ts';
import { fetchNode } from './fetch-node.ts';
import { releaseNotes, type ReleaseFile } from './notes.ts';
import { hostTarget, TARGETS } from './targets.ts';
import { writeClientWheel, writePlatformWheel } from './wheels.ts';

const ROOT = resolve(import.meta.dirname, '..');
export const OUT = join(import.meta.dirname, 'out');
/** The blob for the other platforms, made next to dist/ptc.blob. */
const CROSS_BLOB = 'dist/ptc-cross.blob';

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Builds every release file into release/out/ and returns their names. */
export async function release(opts: { entry?: string; bootstrapEntry?: string; log?: (line: string) => void } = {}): Promise<string[]> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
  const version = pinnedNodeVersion(pkg);
  const host = hostTarget();
  if (!host) {
    throw new BuildError(`a release is built on one of ${TARGETS.map((t) => t.id).join(', ')} (this is ${process.platform}-${process.arch})`);
  }
  const result = await build({ entry: opts.entry, bootstrapEntry: opts.bootstrapEntry, quiet: false });

  const seaConfig = readSeaConfig(join(ROOT, 'sea-config.json'));
  // Another platform's V8 would refuse this one's code caches: the parts' caches stay out too.
  const crossAssets = Object.fromEntries(Object.entries(seaConfig.assets ?? {}).filter(([name]) => !name.endsWith('.cache')));
  const crossBlob = makeSeaBlob(result.node, ROOT, { ...seaConfig, assets: crossAssets, output: CROSS_BLOB, useCodeCache: false, useSnapshot: false });

  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const files: ReleaseFile[] = [];
  for (const target of TARGETS) {
    const name = target.file(result.ptcVersion);
    const out = join(OUT, name);
    if (target === host) {
      copyFileSync(result.binary, out);
    } else {
      const t0 = performance.now();
      await makeExecutable(fetchNode(target, version, log), crossBlob, out);
      log(`  ${name} in ${((performance.now() - t0) / 1000).toFixed(2)}s`);
    }
    const how = target === host ? 'built here, with code cache' : 'cross-built: no code cache, no snapshot';
    const signature = target.kind.format === 'macho' ? '; unsigned, see macOS below' : '';
    files.push({ name, bytes: statSync(out).size, what: `ptc for ${target.id} (Node v${version} inside; ${how}${signature})` });
  }
  // The wheels: the client alone, and the client with each binary (release/wheels.ts).
  const wheels: ReleaseFile[] = [{ name: basename(writeClientWheel(OUT)), bytes: 0, what: 'the Python client alone (`ptc_client`), for any platform: `pip install --no-index` it' }];
  for (const target of TARGETS) {
    const wheel = basename(writePlatformWheel(OUT, join(OUT, target.file(result.ptcVersion)), result.ptcVersion));
    wheels.push({ name: wheel, bytes: 0, what: `the Python client and ptc for ${target.id} as its \`ptc\` script: one \`pip install --no-index\` puts both on the machine` });
  }
  for (const wheel of wheels) files.push({ ...wheel, bytes: statSync(join(OUT, wheel.name)).size });
  copyFileSync(result.bootstrap, join(OUT, 'bootstrap.mjs'));
  files.push({ name: 'bootstrap.mjs', bytes: statSync(result.bootstrap).size, what: 'the carrier alone, for `--node` / node-script launches on any Node >= 20.12' });
  writeFileSync(join(OUT, 'RELEASE.md'), releaseNotes(result.ptcVersion, `v${version}`, files));

  const names = [...files.map((f) => f.name), 'RELEASE.md'];
  const lines: string[] = [];
  for (const name of names) lines.push(`${await sha256(join(OUT, name))}  ${name}`);
  writeFileSync(join(OUT, 'SHA256SUMS'), lines.join('\n') + '\n');
  log(`release: ${relative(process.cwd(), OUT)}/\n${lines.map((l) => `  ${l}`).join('\n')}`);
  return [...names, 'SHA256SUMS'];
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(import.meta.filename)) {
  const { values } = parseArgs({ options: { entry: { type: 'string' }, 'bootstrap-entry': { type: 'string' } } });
  try {
    await release({ entry: values.entry, bootstrapEntry: values['bootstrap-entry'] });
  } catch (err) {
    console.error(`release failed: ${err instanceof BuildError ? err.message : ((err as Error).stack ?? String(err))}`);
    process.exitCode = 1;
  }
}
