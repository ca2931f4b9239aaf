// The linux-arm64 release binary runs the CLI's end-to-end cases under qemu-user: the kernel's
// binfmt_misc hands the aarch64 ELF to Debian's qemu-aarch64-static (.ci/run registers it), and
// the binary re-executes itself as the embedded carrier, which only works when the registration
// has the F flag (the interpreter is opened at registration, so it is found inside the sandbox's
// mount namespace too).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJson } from '../../wire/decode.ts';
import { repoRoot } from '../helpers/runtime.ts';
import { ensureRelease, file, NODE, VERSION } from './artifacts.ts';

ensureRelease();
const BIN = file('linux-arm64');
const work = mkdtempSync(join(tmpdir(), 'ptc-arm64-'));

function ptc(args: string[], input = '') {
  // Emulated start-up takes seconds, more on a loaded machine.
  const result = spawnSync(BIN, args, { cwd: work, input, encoding: 'utf8', env: { PATH: '/usr/bin:/bin' }, timeout: 180_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, error: result.error };
}
const json = (stdout: string) => decodeJson(stdout) as any;

test('binfmt_misc sends aarch64 ELF files to qemu-user with the F flag', () => {
  const entry = '/proc/sys/fs/binfmt_misc/qemu-aarch64';
  assert.ok(existsSync(entry), `${entry} is missing: install qemu-user-static and binfmt-support and run update-binfmts --enable qemu-aarch64 (.ci/run does)`);
  const text = readFileSync(entry, 'utf8');
  assert.match(text, /^enabled$/m);
  assert.match(text, /^interpreter \S*aarch64/m);
  assert.match(text, /^flags: [A-Z]*F/m);
});

test('`version` prints the ptc version, the Node inside and the protocol', () => {
  const { code, stdout, stderr } = ptc(['version']);
  assert.is(stderr, '');
  assert.is(code, 0);
  assert.match(stdout, new RegExp(`^ptc ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
  assert.match(stdout, new RegExp(`^node ${NODE.replace(/\./g, '\\.')}$`, 'm'));
  assert.match(stdout, /^protocol \d+$/m);
});

test('a program with bindings runs in the embedded carrier and returns a lossless value', () => {
  const program = `
    const open = await tracker.listIssues({ unlabeled: true });
    inspect(open.length, 'unlabeled');
    const first = await tracker.getIssue(open[0].id);
    return { id: first.id, arch: process.arch, title: first.title };`;
  const { code, stdout, stderr } = ptc(['run', '--json', '--bindings', join(repoRoot, 'examples', 'tools.mjs'), '-'], program);
  assert.is(stderr, '');
  assert.is(code, 0);
  const result = json(stdout);
  assert.is(result.status, 'ok');
  assert.equal(result.value, { id: 9007199254740993n, arch: 'arm64', title: 'Crash when saving a file with an emoji name' });
  assert.equal(result.output, [{ type: 'text', text: "4 unlabeled\n", stream: 'stdout' }]);
  assert.is(result.sandbox.backend, 'bwrap');
});

test('an exception is a failure of kind exception with its name, message and location', () => {
  const { code, stdout } = ptc(['run', '--json', '-'], 'inspect("before");\nthrow new RangeError("too far")');
  assert.is(code, 1);
  const result = json(stdout);
  assert.is(result.failure.kind, 'exception');
  assert.is(result.failure.name, 'RangeError');
  assert.is(result.failure.message, 'too far');
  assert.equal(result.failure.location, { line: 2, column: 7 });
  assert.equal(result.output, [{ type: 'text', text: 'before\n', stream: 'stdout' }]);
});

test('a program past its deadline is a timeout, and human mode says so on stderr', () => {
  const { code, stdout, stderr } = ptc(['run', '--timeout-ms', '3000', '-'], 'inspect("started"); while (true) {}');
  assert.is(code, 1);
  assert.is(stdout, 'started\n');
  assert.match(stderr, /program failed \(timeout\): execution timed out during execution \(deadline 3000 ms elapsed\)/);
});

test('a value that is not lossless JSON is invalid-output naming the path', () => {
  const { code, stdout } = ptc(['run', '--json', '-'], 'return { ok: 1, bad: [new Map()] }');
  assert.is(code, 1);
  const result = json(stdout);
  assert.is(result.status, 'failed');
  assert.is(result.failure.kind, 'invalid-output');
  assert.match(result.failure.message, /bad\[0\]|bad\.0|\$\.bad/);
});

test('output past the budget is output-limit', () => {
  const { code, stdout } = ptc(['run', '--json', '--max-output-bytes', '10', '-'], 'inspect("hello world and more")');
  assert.is(code, 1);
  const result = json(stdout);
  assert.is(result.failure.kind, 'output-limit');
});


test('a run under emulation survives the sweeps of native ptc hosts starting beside it (its host marks name a start time they read back)', async () => {
  // qemu-user answers a process's own /proc/self/stat with a start time a tick off the kernel's;
  // a host that marked its cgroups and temp directory with that time had them swept, its carrier
  // killed, by every native ptc that started meanwhile.
  const { spawn } = await import('node:child_process');
  const emulated = spawn(BIN, ['run', '--json', '--sandbox-backend', 'bwrap', '-'], { cwd: work, env: { PATH: '/usr/bin:/bin' } });
  let stdout = '';
  emulated.stdout.on('data', (chunk) => (stdout += chunk));
  const ended = new Promise<number | null>((resolve) => emulated.on('close', resolve));
  emulated.stdin.end('await new Promise((resolve) => setTimeout(resolve, 8000)); return "survived"');
  // Native hosts, each sweeping what it takes for leftovers of gone hosts as it starts.
  const native = join(repoRoot, 'dist', 'ptc');
  for (let i = 0; i < 6; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const sweeper = spawnSync(native, ['run', '--json', '--sandbox-backend', 'bwrap', '-'], { cwd: work, input: 'return 1', encoding: 'utf8', timeout: 120_000 });
    assert.is(sweeper.status, 0, sweeper.stderr + sweeper.stdout);
  }
  assert.is(await ended, 0, stdout);
  assert.is(json(stdout).value, 'survived');
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
