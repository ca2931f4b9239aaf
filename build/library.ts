// Builds the installable library package and packs it.
//
//   node build/library.ts [--out DIR] [--pack-destination DIR] [--no-pack] [--quiet]   (npm run package)
//
// Stages dist/package/ and packs it into ptc-<version>.tgz at the repository root (or DIR):
//   lib/index.js, lib/bin.js  host/index.ts and host/cli/bin.ts (and lib/ai.js, host/ai/index.ts,
//                             which imports the user's `ai`, and lib/configuration.js,
//                             host/configuration.ts, for profile editors), bundled by esbuild as ESM for
//                             node22 with every dependency inside (code shared by both entries
//                             and the lazily loaded parts, `ptc mcp` among them, are chunks in lib/)
//   lib/bootstrap.mjs         bootstrap/main.ts bundled alone, as dist/bootstrap.mjs is: the
//                             library's carrier, run by the user's Node
//   types/                    .d.ts from `tsc --emitDeclarationOnly` (tsconfig.package.json)
//   package.json              made here from the root's: exports, types, bin, engines
//
// The package has a manifest of its own because the root's describes the checkout: it pins Node
// as an optional dependency (the package must not install a second `node` for its users), and
// its engines say what sets the checkout up, not what runs the package. Dependencies are bundled
// rather than declared so that the package runs exactly the versions the lockfile pins and tests,
// and installs from its tarball with no registry at all.

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';
import { MINIMUM_NODE } from '../host/supported-node.ts';
import { ASCII_OUTPUT, writeAscii } from './ascii.ts';

const ROOT = resolve(import.meta.dirname, '..');

/** The oldest Node the host runs on (host/supported-node.ts). Tested on 22.23.5 and the pinned Node. */
export const PACKAGE_ENGINES = { node: `>=${MINIMUM_NODE}` };

/** What `ptc/ai` is tested against (the current major of the AI SDK, and the zod versions that SDK takes). */
export const AI_PEERS = { ai: '^7.0.0', zod: '^3.25.76 || ^4.1.8' };
/** The OpenTelemetry API the runtime's spans go through, when the user has it (docs/traces.md); 1.x is one stable API. */
export const TRACING_PEERS = { '@opentelemetry/api': '^1.3.0' };
/** The carrier's file in lib/, next to the chunks that find it through PTC_PACKAGE_CARRIER. */
const CARRIER_FILE = 'bootstrap.mjs';

// Bundled CommonJS that calls require() needs a real `require` in ESM output (esbuild's shim
// otherwise throws "Dynamic require of ... is not supported").
const REQUIRE_BANNER = `import { createRequire as __ptcCreateRequire } from 'node:module'; const require = __ptcCreateRequire(import.meta.url);`;

export class PackageError extends Error {}

interface RootManifest {
  name: string;
  version: string;
  description: string;
  license: string;
}

export interface PackageResult {
  /** The staged package directory. */
  dir: string;
  /** The packed tarball, unless packing was skipped. */
  tarball?: string;
}

function rel(file: string): string {
  return relative(process.cwd(), file) || file;
}

async function bundle(options: esbuild.BuildOptions): Promise<void> {
  try {
    const result = await esbuild.build({ logLevel: 'warning', bundle: true, platform: 'node', format: 'esm', banner: { js: REQUIRE_BANNER }, ...options, ...ASCII_OUTPUT });
    writeAscii(result.outputFiles);
  } catch (err) {
    // esbuild has already printed the errors.
    throw new PackageError(`esbuild failed: ${(err as Error).message.split('\n')[0]} (see above)`, { cause: err });
  }
}

function run(command: string, args: string[], what: string): string {
  try {
    return execFileSync(command, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new PackageError(`${what} failed: ${(e.stdout ?? '') + (e.stderr ?? '') || e.message}`.trim(), { cause: err });
  }
}

/** The package's manifest, from the root's name, version, description and license. */
export function packageManifest(root: RootManifest): Record<string, unknown> {
  return {
    name: root.name,
    version: root.version,
    description: root.description,
    license: root.license,
    type: 'module',
    exports: {
      '.': { types: './types/host/index.d.ts', default: './lib/index.js' },
      './ai': { types: './types/host/ai/index.d.ts', default: './lib/ai.js' },
      './configuration': { types: './types/host/configuration.d.ts', default: './lib/configuration.js' },
      './package.json': './package.json',
    },
    types: './types/host/index.d.ts',
    bin: { ptc: './lib/bin.js' },
    engines: PACKAGE_ENGINES,
    // Only `ptc/ai` needs the AI SDK and zod, and only traces the OpenTelemetry API (loaded when
    // present), so all are optional: npm installs none of them for a user who does not want them.
    peerDependencies: { ...AI_PEERS, ...TRACING_PEERS },
    peerDependenciesMeta: Object.fromEntries(Object.keys({ ...AI_PEERS, ...TRACING_PEERS }).map((name) => [name, { optional: true }])),
  };
}

/** Stages the package in `out` (default dist/package) and packs it into ptc-<version>.tgz in `packDestination` (default the root). */
export async function buildPackage(opts: { out?: string; packDestination?: string; pack?: boolean; quiet?: boolean } = {}): Promise<PackageResult> {
  const log = opts.quiet ? () => {} : (msg: string) => console.log(msg);
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as RootManifest;
  const dir = resolve(opts.out ?? join(ROOT, 'dist', 'package'));
  const lib = join(dir, 'lib');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(lib, { recursive: true });

  // The library and the bin share one bundle split into chunks, so the bin costs no second copy.
  await bundle({
    entryPoints: { index: join(ROOT, 'host/index.ts'), bin: join(ROOT, 'host/cli/bin.ts'), ai: join(ROOT, 'host/ai/index.ts'), configuration: join(ROOT, 'host/configuration.ts') },
    // `ptc/ai` imports the user's own AI SDK (a peer dependency), never a copy of it; traces go
    // through the user's own OpenTelemetry API, the one their SDK registers with.
    external: ['ai', ...Object.keys(TRACING_PEERS)],
    outdir: lib,
    splitting: true,
    chunkNames: '[name]-[hash]',
    target: 'node22',
    // See build/shims/string-width.ts: the real package costs ~50 ms at every start.
    alias: { 'string-width': join(ROOT, 'build/shims/string-width.ts') },
    define: { PTC_PACKAGE_CARRIER: JSON.stringify(`./${CARRIER_FILE}`) },
  });
  // The same bundle as dist/bootstrap.mjs: it is also what `ptc bootstrap` writes and ssh uploads.
  await bundle({ entryPoints: [join(ROOT, 'bootstrap/main.ts')], outfile: join(lib, CARRIER_FILE), target: 'node20.12' });

  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  run(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.package.json'), '--outDir', join(dir, 'types')], 'tsc (declarations)');
  if (!existsSync(join(dir, 'types/host/index.d.ts'))) throw new PackageError(`tsc wrote no ${rel(join(dir, 'types/host/index.d.ts'))}`);

  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(packageManifest(root), null, 2)}\n`);
  cpSync(join(ROOT, 'README.md'), join(dir, 'README.md'));
  log(`staged ${root.name} ${root.version} in ${rel(dir)}`);
  if (opts.pack === false) return { dir };

  // --ignore-scripts: the staged manifest has none, and the root's prepack must not run again.
  const destination = resolve(opts.packDestination ?? ROOT);
  mkdirSync(destination, { recursive: true });
  const out = run('npm', ['pack', dir, '--pack-destination', destination, '--ignore-scripts', '--json'], 'npm pack');
  const [{ filename }] = JSON.parse(out) as Array<{ filename: string }>;
  const tarball = join(destination, filename);
  log(`packed ${rel(tarball)}`);
  return { dir, tarball };
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(import.meta.filename)) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      'pack-destination': { type: 'string' },
      'no-pack': { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
    },
  });
  try {
    await buildPackage({ out: values.out, packDestination: values['pack-destination'], pack: !values['no-pack'], quiet: values.quiet });
  } catch (err) {
    console.error(`package build failed: ${err instanceof PackageError ? err.message : ((err as Error).stack ?? String(err))}`);
    process.exitCode = 1;
  }
}
