// The CLI through the built binary: embedded carrier by default, node-script with the machine's
// own Node and the bootstrap the binary writes. Assumes `npm run build` has run. The tests of how
// the CLI reads flags and prints results run against the binary and from source.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJson } from '../../wire/decode.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot } from '../helpers/runtime.ts';
import { VERSION } from '../../host/index.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const SYSTEM_NODE = '/usr/bin/node';
const work = mkdtempSync(join(tmpdir(), 'ptc-cli-'));

function ptc(args: string[], input = '', env: NodeJS.ProcessEnv = { PATH: '/usr/bin:/bin' }) {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const result = spawnSync(BIN, args, { cwd: repoRoot, input, encoding: 'utf8', env, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const parseResult = (stdout: string) => decodeJson(stdout) as any;

function ptcFromSource(args: string[], input = '') {
  const result = spawnSync(process.execPath, [join(repoRoot, 'host', 'cli', 'bin.ts'), ...args], { cwd: repoRoot, input, encoding: 'utf8', env: { PATH: '/usr/bin:/bin' }, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Defines one test per front-end build: dist/ptc and host/cli/bin.ts from source. */
function both(name: string, body: (run: typeof ptc) => void): void {
  test(`${name} (dist/ptc)`, () => body(ptc));
  test(`${name} (source)`, () => body(ptcFromSource));
}

test('the README demo runs through the binary and prints live output and the value', () => {
  const { code, stdout, stderr } = ptc(['run', 'examples/triage.ts', '--bindings', 'examples/tools.mjs']);
  assert.is(stderr, '');
  assert.is(code, 0);
  assert.match(stdout, /^4 unlabeled issues\n/);
  assert.match(stdout, /#9007199254740993 \[urgent\] bug/);
  assert.match(stdout, /notified #oncall:/);
  assert.match(stdout, /urgent: \[ 9007199254740993n, 9007199254740997n \]/);
});

both('a reader that closes the pipe early ends ptc quietly, with no stack', (run) => {
  // 2 MB of output outruns the pipe's buffer, so ptc is still writing when `head` has gone.
  const bin = run === ptc ? `'${BIN}'` : `'${process.execPath}' '${join(repoRoot, 'host', 'cli', 'bin.ts')}'`;
  const script = `${bin} run - 2>"$1" <<'END' | head -c 5
for (let i = 0; i < 2000; i++) inspect('x'.repeat(1000));
END
echo " \${PIPESTATUS[0]}"`;
  const errFile = join(work, `epipe-${run === ptc ? 'dist' : 'source'}.txt`);
  const result = spawnSync('bash', ['-c', script, 'bash', errFile], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
  assert.is(readFileSync(errFile, 'utf8'), '');
  assert.is(result.stdout, 'xxxxx 0\n');
});

test('--json prints exactly one lossless JSON result', () => {
  const { code, stdout } = ptc(['run', '--json', '-'], 'return 12345678901234567890n');
  assert.is(code, 0);
  assert.is(stdout.trimEnd().split('\n').length, 1);
  assert.match(stdout, /"value":12345678901234567890[,}]/);
  const result = parseResult(stdout);
  assert.is(result.status, 'ok');
  assert.is(result.value, 12345678901234567890n);
  assert.equal(result.output, []);
  assert.type(result.sandbox, 'object');
});

test('--json reports a failed program with its kind and exits 1', () => {
  const { code, stdout } = ptc(['run', '--json', '-'], 'inspect("before");\nthrow new RangeError("too far")');
  assert.is(code, 1);
  const result = parseResult(stdout);
  assert.is(result.status, 'failed');
  assert.is(result.failure.kind, 'exception');
  assert.is(result.failure.name, 'RangeError');
  assert.is(result.failure.message, 'too far');
  assert.equal(result.failure.location, { line: 2, column: 7 });
  assert.equal(result.output, [{ type: 'text', text: 'before\n', stream: 'stdout' }]);
});

test('human mode prints the failure on stderr; timeouts exit 1', () => {
  const { code, stdout, stderr } = ptc(['run', '--timeout-ms', '1500', '-'], 'inspect("started"); while (true) {}');
  assert.is(code, 1);
  assert.is(stdout, 'started\n');
  assert.match(stderr, /program failed \(timeout\): execution timed out during execution \(deadline 1500 ms elapsed\)/);
});

test('usage and configuration errors exit 2 and name the problem', () => {
  const bogus = ptc(['run', '--bogus', '-'], 'return 1');
  assert.is(bogus.code, 2);
  assert.is(bogus.stderr, 'ptc: unknown option --bogus (ptc run --help lists the options)\n');

  const zero = ptc(['run', '--max-pending-calls', '0', '-'], 'return 1');
  assert.is(zero.code, 2);
  assert.match(zero.stderr, /maxPendingCalls must be a positive integer, got 0/);

  const configPath = join(work, 'config.json');
  writeFileSync(configPath, JSON.stringify({ timeoutMs: 1000, maxOutputBytez: 5 }));
  const unknown = ptc(['run', '--config', configPath, '-'], 'return 1');
  assert.is(unknown.code, 2);
  assert.match(unknown.stderr, /unknown field "maxOutputBytez"/);

  const missing = ptc(['run', 'no-such-program.ts']);
  assert.is(missing.code, 2);
  assert.match(missing.stderr, /cannot read program "no-such-program.ts"/);

  const none = ptc([]);
  assert.is(none.code, 2);
});

test('--config and limit flags reach the runtime', () => {
  const configPath = join(work, 'limits.json');
  writeFileSync(configPath, JSON.stringify({ maxOutputBytes: 10 }));
  const { code, stdout } = ptc(['run', '--json', '--config', configPath, '-'], 'inspect("0123456789abcdef")');
  assert.is(code, 1);
  const result = parseResult(stdout);
  assert.is(result.failure.kind, 'output-limit');
  assert.equal(result.output, [{ type: 'text', text: '0123456789', stream: 'stdout' }]);
});

test('the embedded carrier gets the heap limit and a scrubbed environment', () => {
  const program = `
    const { execSync } = await import('node:child_process');
    const v8 = await import('node:v8');
    return { env: process.env, limitMb: Math.round(v8.getHeapStatistics().heap_size_limit / 2 ** 20), os: execSync('env', { encoding: 'utf8' }) };
  `;
  const { code, stdout } = ptc(['run', '--json', '--max-old-generation-size-mb', '64', '-'], program, { PATH: '/usr/bin:/bin', SECRET_TOKEN: 'hunter2' });
  assert.is(code, 0);
  const { value } = parseResult(stdout);
  assert.equal(value.env, {});
  assert.ok(value.limitMb < 400, `heap limit ${value.limitMb} MiB should reflect --max-old-generation-size-mb 64`);
  assert.not.match(value.os, /SECRET_TOKEN|PTC_CARRIER|NODE_OPTIONS/);
});

test('node-script: the machine\'s own Node runs the bootstrap the binary writes', () => {
  assert.ok(existsSync(SYSTEM_NODE), `${SYSTEM_NODE} is missing: .ci/run installs the distribution's nodejs`);
  const bootstrap = join(work, 'bootstrap.mjs');
  const written = ptc(['bootstrap', '--out', bootstrap]);
  assert.is(written.code, 0);
  assert.is(readFileSync(bootstrap, 'utf8'), readFileSync(join(repoRoot, 'dist', 'bootstrap.mjs'), 'utf8'));
  const system = spawnSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const { code, stdout, stderr } = ptc(
    ['run', '--json', '--node', SYSTEM_NODE, '--bootstrap', bootstrap, '--bindings', 'examples/tools.mjs', '-'],
    'const issue = await tracker.getIssue(9007199254740997n); inspect(issue.title); return { node: process.version, id: issue.id }',
  );
  assert.is(stderr, '');
  assert.is(code, 0);
  const result = parseResult(stdout);
  assert.equal(result.value, { node: system, id: 9007199254740997n });
  assert.equal(result.output, [{ type: 'text', text: 'Login fails after password reset\n', stream: 'stdout' }]);
});

test('human mode streams output while the program is still running', async () => {
  const child = spawn(BIN, ['run', '-'], { cwd: repoRoot, env: { PATH: '/usr/bin:/bin' } });
  child.stdin.end('inspect("first"); await new Promise((resolve) => setTimeout(resolve, 1500)); inspect("second")');
  let exited = false;
  child.on('exit', () => {
    exited = true;
  });
  const first = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(String(chunk))));
  assert.is(first, 'first\n');
  assert.is(exited, false, 'the first line arrived before the program finished');
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.is(code, 0);
});

both('a limit flag that is not a number quotes what was typed', (run) => {
  assert.equal(run(['run', '--timeout-ms', 'abc', '-'], 'return 1'), { code: 2, stdout: '', stderr: 'ptc: --timeout-ms must be a number, got "abc"\n' });
});

both('a configuration error is printed with one "ptc:" prefix', (run) => {
  const configPath = join(work, 'negative.json');
  writeFileSync(configPath, JSON.stringify({ timeoutMs: -1 }));
  const result = run(['run', '--config', configPath, '-'], 'return 1');
  assert.equal(result, { code: 2, stdout: '', stderr: 'ptc: config: timeoutMs must be a positive integer of at most 2147483647 ms (Node\'s timer limit), got -1\n' });
});

both('a bad --node or --bootstrap is a usage error found before any carrier starts', (run) => {
  assert.equal(run(['run', '--node', join(work, 'no-node'), '-'], 'return 1'), { code: 2, stdout: '', stderr: `ptc: --node ${JSON.stringify(join(work, 'no-node'))}: no such file\n` });
  assert.equal(run(['run', '--node', 'no-such-node-here', '-'], 'return 1'), { code: 2, stdout: '', stderr: 'ptc: --node "no-such-node-here": no executable of that name on PATH\n' });
  const plain = join(work, 'not-executable');
  writeFileSync(plain, '');
  assert.equal(run(['run', '--node', plain, '-'], 'return 1'), { code: 2, stdout: '', stderr: `ptc: --node ${JSON.stringify(plain)}: the file is not executable\n` });
  const missing = join(work, 'no-bootstrap.mjs');
  assert.equal(run(['run', '--node', SYSTEM_NODE, '--bootstrap', missing, '-'], 'return 1'), { code: 2, stdout: '', stderr: `ptc: --bootstrap ${JSON.stringify(missing)}: no readable file there\n` });
});

both('--version prints the version', (run) => {
  assert.equal(run(['--version']), { code: 0, stdout: `ptc ${VERSION}\n`, stderr: '' });
});

both('an exception shows its cause chain, and a stdin program is named [stdin]', (run) => {
  const thrown = run(['run', '-'], 'throw new Error("outer", { cause: new TypeError("inner", { cause: 42 }) })');
  assert.equal(thrown, {
    code: 1,
    stdout: '',
    stderr: 'ptc: program failed (exception): outer\nError: outer\n    at [stdin]:1:7\n[cause]: TypeError: inner\n  [cause]: 42\n',
  });
  // Port 9 is on fetch's list of forbidden ports: a failure with a cause that needs no network.
  const fetched = run(['run', '-'], 'await fetch("http://127.0.0.1:9/")');
  assert.is(fetched.code, 1);
  assert.is(fetched.stderr, 'ptc: program failed (exception): fetch failed\nTypeError: fetch failed\n[cause]: Error: bad port\n');
});

both('output cut by the budget ends its line before the failure is printed', (run) => {
  const result = run(['run', '--max-output-bytes', '10', '-'], 'inspect("hello world and more")');
  assert.equal(result, {
    code: 1,
    stdout: 'hello worl\n',
    stderr: 'ptc: program failed (output-limit): captured output exceeded maxOutputBytes (10 bytes); the output that fit is kept\n',
  });
});

both('carrier stderr already printed as output is not repeated after the failure', (run) => {
  const result = run(['run', '-'], 'process.stderr.write("dying\\n"); process.exit(3)');
  // What the program wrote to stderr is output on ptc's stderr, ahead of the failure, and only once.
  assert.equal(result, { code: 1, stdout: '', stderr: 'dying\nptc: program failed (worker-exit): the carrier exited with code 3 before the program finished\n' });
});

both('ptc run writes the program\'s stderr output to its stderr and the rest to stdout', (run) => {
  const result = run(['run', '-'], 'console.log("out"); console.error("err"); inspect("shown"); return 1');
  assert.equal(result, { code: 0, stdout: 'out\nshown\n1\n', stderr: 'err\n' });
});

both('--json keeps the sign of -0', (run) => {
  const { code, stdout } = run(['run', '--json', '-'], 'return [-0, 0, { a: -0 }]');
  assert.is(code, 0);
  assert.match(stdout, /"value":\[-0,0,\{"a":-0\}\]/);
  assert.ok(Object.is(parseResult(stdout).value[0], -0));
});

both('a program that ends with a bare expression gets a hint on stderr and in --json', (run) => {
  const human = run(['run', '-'], 'const total = 42;\ntotal');
  const hint = 'the program ended with an expression and returned nothing: a program is an async function body, so write `return <expression>` to hand back its value';
  assert.equal(human, { code: 0, stdout: '', stderr: `ptc: hint: ${hint}\n` });
  const json = parseResult(run(['run', '--json', '-'], 'const total = 42;\ntotal').stdout);
  assert.is(json.hint, hint);
});

both('--bindings takes an ES or a CommonJS module, with namespaces of functions', (run) => {
  const cjs = join(work, 'tools.cjs');
  writeFileSync(cjs, [
    'exports.add = async (a, b) => a + b;',
    'exports.ns = { mul: async (a, b) => a * b, deep: { neg: async (a) => -a } };',
    'exports.count = 5;',
    'exports.fail = async () => { const e = new Error("nope"); e.code = "E_NOPE"; throw e; };',
  ].join('\n'));
  const assigned = join(work, 'assigned.cjs');
  writeFileSync(assigned, 'const tools = {}; tools.twice = async (n) => 2 * n; module.exports = tools;');
  const esm = join(work, 'tools.mjs');
  writeFileSync(esm, 'export async function add(a, b) { return a + b; }\nexport const ns = { constructor: async () => "ctor" };\nexport default async () => "ignored";');
  const program = 'try { await fail() } catch (e) { return [await add(1, 2), await ns.mul(2, 3), await ns.deep.neg(4), typeof count, e.name, e.binding, e.code] }';
  assert.equal(run(['run', '--bindings', cjs, '-'], program), { code: 0, stdout: "[ 3, 6, -4, 'undefined', 'BindingError', 'fail', 'E_NOPE' ]\n", stderr: '' });
  assert.equal(run(['run', '--bindings', assigned, '-'], 'return await twice(21)'), { code: 0, stdout: '42\n', stderr: '' });
  assert.equal(run(['run', '--bindings', esm, '-'], 'return [await add(1, 2), await ns.constructor(), typeof ns]'), { code: 0, stdout: "[ 3, 'ctor', 'object' ]\n", stderr: '' });
});

both('every usage or configuration error is one line, whatever raised it', (run) => {
  assert.equal(run(['run', '--mode', 'bogus', '-'], 'return 1'), {
    code: 2,
    stdout: '',
    stderr: 'ptc: Invalid values: Argument: mode, Given: "bogus", Choices: "per-call", "vm-script", "persistent-in-memory"\n',
  });
  const absent = join(work, 'no-such-dir');
  assert.equal(run(['run', '--json', '--cwd', absent, '-'], 'return 1'), { code: 2, stdout: '', stderr: `ptc: --cwd ${JSON.stringify(absent)}: no such directory\n` });
  const file = join(work, 'a-file');
  writeFileSync(file, '');
  assert.equal(run(['run', '--cwd', file, '-'], 'return 1'), { code: 2, stdout: '', stderr: `ptc: --cwd ${JSON.stringify(file)}: not a directory\n` });
  assert.equal(run(['repl', '--cwd', absent], '1\n'), { code: 2, stdout: '', stderr: `ptc: --cwd ${JSON.stringify(absent)}: no such directory\n` });
  const unwritable = join(work, 'no-such-dir', 'bootstrap.mjs');
  assert.equal(run(['bootstrap', '--out', unwritable]), {
    code: 2,
    stdout: '',
    stderr: `ptc: cannot write --out ${JSON.stringify(unwritable)}: ENOENT: no such file or directory, open '${unwritable}'\n`,
  });
});

both('a flag that takes one value, given twice, is a usage error that quotes both', (run) => {
  assert.equal(run(['run', '--timeout-ms', '500', '--timeout-ms', '600', '-'], 'return 1'), { code: 2, stdout: '', stderr: 'ptc: --timeout-ms takes one value, got 2: "500", "600"\n' });
  assert.equal(run(['run', '--cwd', 'a', '--cwd', 'b', '-'], 'return 1'), { code: 2, stdout: '', stderr: 'ptc: --cwd takes one value, got 2: "a", "b"\n' });
  assert.equal(run(['run', '--config', 'a.json', '--config', 'b.json', '-'], 'return 1'), { code: 2, stdout: '', stderr: 'ptc: --config takes one value, got 2: "a.json", "b.json"\n' });
});

both('a Script or REPL program in braces that only parses as an object says to wrap it in parentheses', (run) => {
  const advice = "Expected ';', '}' or <eof> (a leading { ... } is a block: wrap an object literal in parentheses to make it the value)";
  for (const mode of ['vm-script', 'persistent-in-memory']) {
    const { code, stdout } = run(['run', '--json', '--mode', mode, '-'], '{ a: 1, b: [2] }');
    assert.is(code, 1, mode);
    const { failure } = parseResult(stdout);
    assert.equal([failure.kind, failure.name, failure.message, failure.location], ['exception', 'SyntaxError', advice, { line: 1, column: 10 }], mode);
    assert.equal(parseResult(run(['run', '--json', '--mode', mode, '-'], '({ a: 1, b: [2] })').stdout).value, { a: 1, b: [2] }, mode);
  }
  // A function body returns its value: parentheses alone would not help, so no such advice.
  const body = parseResult(run(['run', '--json', '-'], '{ a: 1, b: [2] }').stdout);
  assert.equal([body.failure.kind, body.failure.message], ['exception', "Expected ';', '}' or <eof>"]);
});

test.run();
