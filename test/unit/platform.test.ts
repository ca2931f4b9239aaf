// What ptc chooses per platform, with the platform injected: on Windows no process groups (taskkill's
// tree kill by absolute path, no detached spawn), no bubblewrap (node-permission, partial), reads
// granted everywhere; on Linux the group kill reaches real descendants. The Windows branches run
// here only as selection logic; README says what is verified on Windows only by review.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { killChildTree, treeKill, treeSpawnOptions } from '../../supervision/process-tree.ts';
import { bwrapStatus, planSandbox, readableRoots, resolvePolicy } from '../../host/sandbox/index.ts';
import { platformName } from '../../host/runtime/version.ts';
import { keptEnvironment } from '../../host/worker/launch.ts';
import { keptVariables } from '../../carrier/boot/environment.ts';
import { isFileSystemRoot } from '../../host/sandbox/policy.ts';
import { posix, win32 } from 'node:path';

const NOT_LINUX = 'bubblewrap needs Linux; this is win32';

test('treeSpawnOptions: a process group of its own on POSIX; on Windows not detached, so it stays in libuv\'s kill-on-close job', () => {
  assert.equal(treeSpawnOptions('linux'), { detached: true });
  assert.equal(treeSpawnOptions('darwin'), { detached: true });
  assert.equal(treeSpawnOptions('win32'), { detached: false });
});

test('treeKill on Windows: taskkill /T /F by absolute path under SystemRoot, whatever PATH says', () => {
  assert.equal(treeKill(4242, 'win32', { SystemRoot: 'D:\\Win', PATH: '' }), {
    kind: 'taskkill',
    executable: 'D:\\Win\\System32\\taskkill.exe',
    args: ['/T', '/F', '/PID', '4242'],
  });
  assert.equal(treeKill(7, 'win32', {}), { kind: 'taskkill', executable: 'C:\\Windows\\System32\\taskkill.exe', args: ['/T', '/F', '/PID', '7'] });
});

test('treeKill on Linux: the process group and every real descendant, a setsid one included', async () => {
  // sh starts a grandchild in a session of its own, then waits; the tree walk must still find it.
  const child = spawn('/bin/sh', ['-c', 'setsid sleep 30 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'], ...treeSpawnOptions('linux') });
  const grandchild = await new Promise<number>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim()))));
  const kill = treeKill(child.pid!, 'linux');
  assert.equal(kill.kind, 'signal');
  assert.ok(kill.kind === 'signal' && kill.targets[0] === -child.pid!, 'the group comes first');
  assert.ok(kill.kind === 'signal' && kill.targets.includes(grandchild), `grandchild ${grandchild} in ${JSON.stringify(kill)}`);
  // 'close' waits for every holder of the stdout pipe, the grandchild included, to be gone.
  const closed = new Promise((resolve) => child.once('close', (code, signal) => resolve(signal)));
  assert.is(killChildTree(child, 'linux'), true);
  assert.is(await closed, 'SIGKILL');
  // Dead: gone, or a zombie its new parent has not reaped yet.
  assert.ok(['gone', 'Z'].includes(processState(grandchild)), `grandchild ${grandchild} is ${processState(grandchild)}`);
});

function processState(pid: number): string {
  try {
    return /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))![1]!;
  } catch {
    return 'gone';
  }
}

test('killChildTree on Windows leaves an exited child alone: its pid may already name another process', async () => {
  // A live process of ours stands in for the stranger that reused the pid (on Linux a kill sent by
  // mistake would reach only it).
  const stranger = spawn('/bin/sh', ['-c', 'sleep 30'], { stdio: 'ignore', detached: true });
  await new Promise((resolve) => stranger.once('spawn', resolve));
  assert.is(killChildTree({ pid: stranger.pid, exitCode: 0, signalCode: null }, 'win32'), false);
  assert.is(killChildTree({ pid: stranger.pid, exitCode: null, signalCode: 'SIGTERM' }, 'win32'), false);
  assert.is(process.kill(stranger.pid!, 0), true);
  const closed = new Promise((resolve) => stranger.once('close', (code, signal) => resolve(signal)));
  assert.is(killChildTree(stranger, 'linux'), true);
  assert.is(await closed, 'SIGKILL');
});

test('bwrapStatus on Windows (or any non-Linux platform): unavailable without probing', async () => {
  assert.equal(await bwrapStatus('/usr/bin/bwrap', { platform: 'win32' }), { unavailable: NOT_LINUX, source: 'none' });
  assert.equal(await bwrapStatus('/usr/bin/bwrap', { platform: 'darwin' }), { unavailable: 'bubblewrap needs Linux; this is darwin', source: 'none' });
});

test('planSandbox on Windows: auto is node-permission with partial enforcement and says why not bwrap; bwrap and require full fail closed', async () => {
  const policy = await resolvePolicy({ mode: 'workspace-write' }, await realpath(tmpdir()));
  const windows = { platform: 'win32' as const };
  assert.equal(await planSandbox(policy, { carrierNodeVersion: 'v26.10.0' }, undefined, windows), {
    backend: 'node-permission',
    enforcement: 'partial',
    policy,
    permissionFlag: '--permission',
    governsNetwork: true,
    bwrapUnavailable: NOT_LINUX,
  });
  assert.equal(await planSandbox(policy, { backend: 'bwrap' }, undefined, windows), { unavailable: NOT_LINUX });
  assert.equal(await planSandbox(policy, { require: 'full' }, undefined, windows), {
    unavailable: `${NOT_LINUX}; Node's permission model (backend "node-permission") enforces file rules (and on Node 25 or later network: all or nothing), not process isolation, and require is "full"`,
  });
  assert.equal(await planSandbox(policy, { backend: 'none', require: 'none' }, undefined, windows), { backend: 'none', enforcement: 'none', policy });
});

test('readableRoots on Windows: every read granted (no /proc or /dev to hide; drives are not under /)', () => {
  const none = { hidden: [], exposed: [] };
  assert.equal(readableRoots(none, 'win32', () => ['Users', 'Windows']), ['*']);
  assert.equal(readableRoots(none, 'linux', () => ['usr', 'proc']), ['/usr', '/dev/full', '/dev/null', '/dev/random', '/dev/urandom', '/dev/zero', '/proc/self/fdinfo']);
  assert.equal(readableRoots({ hidden: [], exposed: [] }, 'darwin', () => ['usr', 'proc']), ['/usr', '/dev/full', '/dev/null', '/dev/random', '/dev/urandom', '/dev/zero']);
});

test('isFileSystemRoot: / on POSIX; a drive or share root on Windows, which a writable root must not be', () => {
  assert.is(isFileSystemRoot('/', posix), true);
  assert.is(isFileSystemRoot('/home', posix), false);
  assert.is(isFileSystemRoot('C:\\', win32), true);
  assert.is(isFileSystemRoot('\\\\server\\share\\', win32), true);
  assert.is(isFileSystemRoot('C:\\Users\\me', win32), false);
});

test('keptEnvironment: a carrier on Windows also inherits SystemRoot and the other variables Windows processes rely on', () => {
  assert.equal(keptEnvironment('linux'), ['PATH', 'TMPDIR', 'TMP', 'TEMP']);
  assert.equal(keptEnvironment('win32'), ['PATH', 'TMPDIR', 'TMP', 'TEMP', 'SystemRoot', 'SystemDrive', 'windir', 'PATHEXT', 'ComSpec']);
});

test('keptVariables: the carrier keeps in its OS environment every variable the host passed it on that platform', () => {
  for (const platform of ['linux', 'darwin', 'win32'] as const) {
    const kept = keptVariables(platform);
    for (const name of keptEnvironment(platform)) assert.ok(kept.has(name), `${platform}: ${name}`);
  }
  assert.not.ok(keptVariables('linux').has('SystemRoot'));
});

test('platformName: the registry\'s and the release files\' spelling', () => {
  assert.is(platformName('linux', 'x64'), 'linux-x64');
  assert.is(platformName('linux', 'arm64'), 'linux-arm64');
  assert.is(platformName('darwin', 'x64'), 'darwin-x64');
  assert.is(platformName('win32', 'x64'), 'win-x64');
});

test.run();
