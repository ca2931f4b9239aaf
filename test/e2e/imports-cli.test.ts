// The import policy through the CLI (dist/ptc and from source): a module vendored for an
// air-gapped machine imports through `ptc run --map-import`, a denied import fails the run (exit 1)
// naming the specifier and the rule, an allow-list keeps everything else out, and `bindings:` makes
// the run's bindings a module. The config file's `imports` field takes the same policy.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJson } from '../../wire/decode.ts';
import { repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const work = mkdtempSync(join(tmpdir(), 'ptc-imports-cli-'));
const vendor = mkdtempSync(join(tmpdir(), 'ptc-vendor-'));
test.after(() => {
  rmSync(work, { recursive: true, force: true });
  rmSync(vendor, { recursive: true, force: true });
});

writeFileSync(join(vendor, 'left-pad.mjs'), 'export default (text, width) => String(text).padStart(width, "0");\n');
writeFileSync(join(work, 'pad.ts'), 'const { default: pad } = await import("left-pad");\nreturn pad(42, 5);\n');
writeFileSync(join(work, 'spawn.ts'), 'await import("node:child_process");\nreturn 1;\n');
writeFileSync(join(work, 'os.ts'), 'return typeof (await import("node:os")).cpus;\n');
writeFileSync(join(work, 'tools.ts'), 'const tools = await import("tools");\nreturn await tools.add(2, 3);\n');
writeFileSync(join(work, 'tools.mjs'), 'export const add = async (a, b) => a + b;\n');
writeFileSync(join(work, 'config.json'), JSON.stringify({ imports: { deny: ['node:child_process'], map: { 'left-pad': join(vendor, 'left-pad.mjs') } } }));

type Run = (args: string[]) => { code: number | null; stdout: string; stderr: string };
// No network anywhere: the sandbox takes it away (workspace-write), and PATH has no package manager in it.
const env = { PATH: '/usr/bin:/bin' };
const binary: Run = (args) => {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const result = spawnSync(BIN, args, { cwd: work, encoding: 'utf8', env, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};
const source: Run = (args) => {
  const result = spawnSync(process.execPath, [join(repoRoot, 'host', 'cli', 'bin.ts'), ...args], { cwd: work, encoding: 'utf8', env, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};

function both(name: string, body: (run: Run) => void): void {
  test(`${name} (dist/ptc)`, () => body(binary));
  test(`${name} (source)`, () => body(source));
}

both('a vendored module imports through ptc run --map-import, confined, with no network', (run) => {
  const { code, stdout, stderr } = run(['run', '--json', '--map-import', `left-pad=${join(vendor, 'left-pad.mjs')}`, 'pad.ts']);
  assert.is(stderr, '');
  assert.is(code, 0);
  const result = decodeJson(stdout) as { value: string; sandbox: { backend: string; network: boolean } };
  assert.is(result.value, '00042');
  assert.is(result.sandbox.backend, 'bwrap');
  assert.is(result.sandbox.network, false);
});

both('--map-import resolves a relative file from the current directory', (run) => {
  writeFileSync(join(work, 'local-pad.mjs'), 'export default (text, width) => String(text).padStart(width, "-");\n');
  const { code, stdout } = run(['run', '--json', '--map-import', 'left-pad=./local-pad.mjs', 'pad.ts']);
  assert.is(code, 0);
  assert.is((decodeJson(stdout) as { value: string }).value, '---42');
});

both('--deny-import fails the run with an exception naming the specifier and the rule', (run) => {
  const { code, stdout, stderr } = run(['run', '--deny-import', 'node:*', 'spawn.ts']);
  assert.is(code, 1);
  assert.is(stdout, '');
  assert.match(stderr, /^ptc: program failed \(exception\): import of "node:child_process" is denied by the import policy \(deny "node:\*"\)\n/);
});

both('--allow-import keeps out what it does not name', (run) => {
  const denied = run(['run', '--json', '--allow-import', 'node:path', 'os.ts']);
  assert.is(denied.code, 1);
  const failure = (decodeJson(denied.stdout) as { failure: { kind: string; message: string } }).failure;
  assert.equal([failure.kind, failure.message], ['exception', 'import of "node:os" is denied by the import policy (no allow rule matches)']);
  const allowed = run(['run', '--json', '--allow-import', 'node:os', 'os.ts']);
  assert.is(allowed.code, 0);
  assert.is((decodeJson(allowed.stdout) as { value: string }).value, 'function');
});

both('--map-import tools=bindings: makes the run\'s bindings a module', (run) => {
  const { code, stdout, stderr } = run(['run', '--json', '--bindings', 'tools.mjs', '--map-import', 'tools=bindings:', 'tools.ts']);
  assert.is(stderr, '');
  assert.is(code, 0);
  assert.is((decodeJson(stdout) as { value: number }).value, 5);
});

both('the config file\'s imports field, with flags laid over it', (run) => {
  const mapped = run(['run', '--json', '--config', 'config.json', 'pad.ts']);
  assert.is(mapped.code, 0);
  assert.is((decodeJson(mapped.stdout) as { value: string }).value, '00042');
  const denied = run(['run', '--config', 'config.json', 'spawn.ts']);
  assert.is(denied.code, 1);
  assert.match(denied.stderr, /import of "node:child_process" is denied by the import policy \(deny "node:child_process"\)/);
  const more = run(['run', '--config', 'config.json', '--deny-import', 'node:os', 'os.ts']);
  assert.match(more.stderr, /import of "node:os" is denied by the import policy \(deny "node:os"\)/);
});

both('a malformed --map-import is a usage error (exit 2)', (run) => {
  const { code, stderr } = run(['run', '--map-import', 'left-pad', 'pad.ts']);
  assert.is(code, 2);
  assert.match(stderr, /--map-import takes SPECIFIER=FILE or SPECIFIER=bindings:\[namespace\], got "left-pad"/);
});


/** One `run` request to `ptc serve` with these flags; the reply's result. */
function serveRun(command: string[], program: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, [...command.slice(1)], { cwd: work, env });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const newline = out.indexOf('\n');
      if (newline === -1) return;
      child.stdin.end();
      resolve((decodeJson(out.slice(0, newline)) as { result: unknown }).result);
    });
    child.on('error', reject);
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'run', params: { program } })}\n`);
  });
}

for (const [name, command] of [['dist/ptc', [BIN]], ['source', [process.execPath, join(repoRoot, 'host', 'cli', 'bin.ts')]]] as const) {
  test(`ptc serve takes the import flags (${name})`, async () => {
    const flags = ['serve', '--deny-import', 'node:child_process', '--map-import', `left-pad=${join(vendor, 'left-pad.mjs')}`];
    const denied = await serveRun([...command, ...flags], 'await import("child_process"); return 1;');
    assert.equal([denied.status, denied.failure.kind, denied.failure.message], ['failed', 'exception', 'import of "child_process" is denied by the import policy (deny "node:child_process")']);
    const mapped = await serveRun([...command, ...flags], 'const { default: pad } = await import("left-pad"); return pad(1, 3);');
    assert.is(mapped.value, '001');
  });
}

test.run();
