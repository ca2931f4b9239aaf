// Issue 16, item 1: a program under the bwrap backend reaching the kernel's shared state, above all
// when ptc runs as root (containers, CI). Without a user namespace real root keeps writing every
// sysctl that checks only file modes, and --cap-drop ALL does not stop it: kernel.core_pattern
// piped into a workspace script made the kernel run it as host root. The probe
// (test/fixtures/kernel-probe.py) tries each interface with raw system calls from a child process
// of the program: sysctls and every other file of /proc and /sys it can open for writing, keyrings,
// nested namespaces, io_uring, userfaultfd, perf, ptrace, the i386 entry that would sidestep an
// x86_64-only filter, mounts, and what exec (setuid binaries included) leaves in its capabilities.
// Through dist/ptc (embedded carrier) as root and as the victim, and through the library on the
// launch under test (source by default; PTC_TEST_LAUNCH=ssh takes the relay's path).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chownSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binaryFor, ownedDirectory, removeReachableBinary, runAs, victims, type TestUser } from '../helpers/users.ts';
import { repoRoot, runProgram } from '../helpers/runtime.ts';

const PROBE = readFileSync(`${repoRoot}test/fixtures/kernel-probe.py`, 'utf8');
const PROGRAM = `const { spawnSync } = await import('node:child_process');
const run = spawnSync('python3', ['-c', ${JSON.stringify(PROBE)}], { encoding: 'utf8', timeout: 60000 });
if (run.status !== 0) throw new Error('probe failed: ' + run.status + ' ' + run.signal + ' ' + run.stderr);
return JSON.parse(run.stdout);`;

const NO_CAPABILITIES = { CapInh: '0000000000000000', CapPrm: '0000000000000000', CapEff: '0000000000000000', CapAmb: '0000000000000000', NoNewPrivs: '1' };

/** What every probe meets once the sandbox holds, as root and as any other user. */
const HELD = (uid: number): Record<string, unknown> => ({
  // /proc is mounted read-only, which refuses root; another user is refused by the file's mode first.
  'write kernel.core_pattern': uid === 0 ? 'EROFS' : 'EACCES',
  'files of /proc and /sys open for writing': [],
  // The seccomp filter.
  'keyctl: read the user keyring': 'EPERM',
  'request_key': 'EPERM',
  'unshare(CLONE_NEWUSER)': 'EPERM',
  'clone(CLONE_NEWUSER)': 'EPERM',
  'io_uring_setup': 'EPERM',
  'userfaultfd': 'EPERM',
  'perf_event_open': 'EPERM',
  'ptrace(PTRACE_TRACEME)': 'EPERM',
  // A call under another ABI kills the process (SIGSYS) rather than pass unjudged.
  ...(process.arch === 'x64' ? { 'keyctl through the i386 entry (int 0x80)': 'killed by signal 31' } : {}),
  // No capabilities, before or after: exec cannot give any back (no_new_privs ignores setuid bits).
  'mount a tmpfs': 'EPERM',
  'capabilities after exec': NO_CAPABILITIES,
});

function assertHeld(seen: Record<string, unknown>, user: TestUser, how: string): void {
  for (const [probe, expected] of Object.entries(HELD(user.uid))) assert.equal(seen[probe], expected, `${how} as ${user.name}: ${probe}`);
}

async function probeThroughBinary(user: TestUser): Promise<Record<string, unknown>> {
  const ws = ownedDirectory(user);
  try {
    const run = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'bwrap', '-'], { cwd: ws.path, input: PROGRAM, timeoutMs: 120_000 });
    const result = JSON.parse(run.stdout) as { status: string; value?: Record<string, unknown>; failure?: unknown; sandbox: { backend: string } };
    assert.is(result.status, 'ok', `${run.stdout}\n${run.stderr}`);
    assert.is(result.sandbox.backend, 'bwrap');
    return result.value!;
  } finally {
    ws.remove();
  }
}

for (const user of victims()) {
  test(`dist/ptc run as ${user.name}: no kernel interface of /proc, /sys, keyrings or namespaces is open to the program`, async () => {
    assertHeld(await probeThroughBinary(user), user, 'dist/ptc');
  });
}

test('the library, on the launch under test: the same probes are refused', async () => {
  const self = victims()[0]!;
  const ws = ownedDirectory(self);
  try {
    const result = await runProgram(PROGRAM, { cwd: ws.path }, { timeoutMs: 120_000, policy: { mode: 'workspace-write' }, sandbox: { backend: 'bwrap' } });
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.is(result.sandbox.backend, 'bwrap');
    assertHeld((result as { value: Record<string, unknown> }).value, self, 'the library');
  } finally {
    ws.remove();
  }
});

for (const user of victims()) {
  test(`dist/ptc run as ${user.name}: a setuid-root binary run inside gains nothing (no_new_privs), mount refuses`, async () => {
    const ws = ownedDirectory(user);
    try {
      const program = `const { spawnSync } = await import('node:child_process');
const run = spawnSync('/usr/bin/mount', ['-t', 'tmpfs', 'none', process.cwd()], { encoding: 'utf8' });
return { status: run.status, stderr: run.stderr.trim() };`;
      const run = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'bwrap', '-'], { cwd: ws.path, input: program });
      const value = (JSON.parse(run.stdout) as { value: { status: number; stderr: string } }).value;
      // mount as the victim runs without its setuid bit, so it knows it is not root; root has no CAP_SYS_ADMIN.
      assert.equal([value.status, /must be superuser|permission denied/.test(value.stderr)], [32, true], value.stderr);
    } finally {
      ws.remove();
    }
  });
}

test('dist/ptc run as root: root without capabilities cannot read a file another user keeps to itself (0600)', async () => {
  const [root, victim] = victims();
  if (victim === undefined || root!.uid !== 0) return console.log('  (skipped: needs root and the victim)');
  // In the workspace, which the sandbox shows: the victim's home is not in its root at all (host-view.test.ts).
  const ws = ownedDirectory(root!);
  const secret = join(ws.path, `.ptc-attack-secret-${process.pid}`);
  try {
    writeFileSync(secret, 'the victim\'s\n', { mode: 0o600 });
    chownSync(secret, victim.uid, victim.gid);
    const program = `const fs = await import('node:fs'); try { return fs.readFileSync(${JSON.stringify(secret)}, 'utf8'); } catch (error) { return error.code; }`;
    const run = await runAs(root!, [binaryFor(root!), 'run', '--json', '--sandbox-backend', 'bwrap', '-'], { cwd: ws.path, input: program });
    assert.is((JSON.parse(run.stdout) as { value: string }).value, 'EACCES', run.stdout);
  } finally {
    ws.remove();
    rmSync(secret, { force: true });
  }
});

test.after(() => removeReachableBinary());

test.run();
