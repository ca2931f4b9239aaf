// Sandbox policy and backend choice: validation messages, realpath of roots, option defaults,
// fail-closed planning, the permission flag per Node version, and denial recognition.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmod, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDenial, permissionFlag, planSandbox, resolvePolicy, resolveSandboxOptions, type ResolvedPolicy, type SandboxOptions, type SandboxPlan } from '../../../../host/sandbox/index.ts';
import { rejection, thrown } from '../../../helpers/assert.ts';

let dir = '';
test.before(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'ptc-sandbox-policy-')));
  await mkdir(join(dir, 'ws'));
  await mkdir(join(dir, 'extra'));
  await writeFile(join(dir, 'file'), '');
  await symlink(join(dir, 'ws'), join(dir, 'ws-link'));
  await symlink(join(dir, 'extra'), join(dir, 'ws', 'extra-link'));
});
test.after(async () => {
  await rm(dir, { recursive: true, force: true });
});


const INVALID_POLICIES: Array<[string, unknown, string, string]> = [
  ['not an object', 'read-only', 'TypeError', `ptc sandbox policy must be an object, got 'read-only'`],
  ['unknown field', { mode: 'read-only', net: false }, 'TypeError', 'ptc sandbox policy: unknown field "net" (value false)'],
  ['missing mode', {}, 'RangeError', 'ptc sandbox policy: mode must be one of "read-only", "workspace-write", "full-access", got undefined'],
  ['bad mode', { mode: 'write' }, 'RangeError', `ptc sandbox policy: mode must be one of "read-only", "workspace-write", "full-access", got 'write'`],
  ['network not boolean', { mode: 'read-only', network: 'no' }, 'TypeError', `ptc sandbox policy: network must be a boolean or { allow: [...], deny?: [...] }, got 'no'`],
  ['network an array', { mode: 'read-only', network: ['api.example.com'] }, 'TypeError', `ptc sandbox policy: network must be a boolean or { allow: [...], deny?: [...] }, got [ 'api.example.com' ]`],
  ['allowlist without allow', { mode: 'read-only', network: { deny: ['10.0.0.0/8'] } }, 'TypeError', 'ptc sandbox policy: network: allow must be an array of rules, got undefined'],
  ['allowlist unknown field', { mode: 'read-only', network: { allow: [], hosts: ['a.example.com'] } }, 'TypeError', 'ptc sandbox policy: network: unknown field "hosts" (value ["a.example.com"])'],
  ['allowlist bad rule', { mode: 'read-only', network: { allow: ['api.example.com', 'https://x.example.com/'] } }, 'TypeError', 'NETRULE'],
  ['allowlist under full-access', { mode: 'full-access', network: { allow: ['api.example.com'] } }, 'RangeError', 'ptc sandbox policy: a network allowlist needs a confined mode ("read-only" or "workspace-write"); "full-access" restricts nothing'],
  ['full-access without network', { mode: 'full-access', network: false }, 'RangeError', 'ptc sandbox policy: network: false needs a confined mode ("read-only" or "workspace-write"); "full-access" restricts nothing'],
  ['roots not an array', { mode: 'workspace-write', writableRoots: '/x' }, 'TypeError', `ptc sandbox policy: writableRoots must be an array of paths, got '/x'`],
  ['empty root', { mode: 'workspace-write', writableRoots: [''] }, 'TypeError', `ptc sandbox policy: writableRoots[0] must be a non-empty path, got ''`],
  ['root not a string', { mode: 'workspace-write', writableRoots: ['extra', 7] }, 'TypeError', 'ptc sandbox policy: writableRoots[1] must be a non-empty path, got 7'],
  ['missing root', { mode: 'workspace-write', writableRoots: ['extra', 'gone'] }, 'RangeError', `ptc sandbox policy: writableRoots[1] 'gone' does not exist`],
  ['missing workspace', { mode: 'read-only', workspaceRoot: 'nowhere' }, 'RangeError', `ptc sandbox policy: workspaceRoot 'nowhere' does not exist`],
  ['workspace is a file', { mode: 'read-only', workspaceRoot: 'file' }, 'RangeError', `ptc sandbox policy: workspaceRoot must be a directory, got 'file' (DIR/file)`],
  ['writable /', { mode: 'workspace-write', writableRoots: ['/'] }, 'RangeError', `ptc sandbox policy: writableRoots[0] '/' would make every path writable; name a directory below it (the workspace is the cwd unless workspaceRoot names one), or use mode "read-only"`],
  ['writable workspace /', { mode: 'workspace-write', workspaceRoot: '/' }, 'RangeError', `ptc sandbox policy: workspaceRoot '/' would make every path writable; name a directory below it (the workspace is the cwd unless workspaceRoot names one), or use mode "read-only"`],
  ['writable under /proc', { mode: 'workspace-write', writableRoots: ['/proc/self/fd'] }, 'RangeError', `ptc sandbox policy: writableRoots[0] '/proc/self/fd' (/proc/PID/fd) is under /proc, which the sandbox replaces`],
  ['writable under /dev', { mode: 'workspace-write', writableRoots: ['/dev/shm'] }, 'RangeError', `ptc sandbox policy: writableRoots[0] '/dev/shm' (/dev/shm) is under /dev, which the sandbox replaces`],
];

for (const [name, input, type, message] of INVALID_POLICIES) {
  test(`resolvePolicy rejects: ${name}`, async () => {
    const error = await rejection(resolvePolicy(input, dir));
    assert.is(error.name, type);
    // A bad rule's reason is the rule parser's (test/unit/network-rules.test.ts); here, that it is quoted under the policy's name.
    if (message === 'NETRULE') return assert.match(error.message, /^ptc sandbox policy: network: allow\[1\] 'https:\/\/x\.example\.com\/' /);
    assert.is(error.message.replaceAll(dir, 'DIR').replace(/\/proc\/\d+\//, '/proc/PID/'), message);
  });
}

test('resolvePolicy keeps the errno of a missing root as the cause', async () => {
  const error = await rejection(resolvePolicy({ mode: 'workspace-write', writableRoots: ['gone'] }, dir));
  assert.is((error.cause as NodeJS.ErrnoException).code, 'ENOENT');
});

test('resolvePolicy fills defaults: workspace is the cwd, network follows the mode', async () => {
  assert.equal(await resolvePolicy({ mode: 'read-only' }, join(dir, 'ws')), { mode: 'read-only', network: false, workspaceRoot: join(dir, 'ws'), writableRoots: [] });
  assert.equal(await resolvePolicy({ mode: 'workspace-write' }, join(dir, 'ws')), { mode: 'workspace-write', network: false, workspaceRoot: join(dir, 'ws'), writableRoots: [] });
  assert.equal(await resolvePolicy({ mode: 'full-access' }, join(dir, 'ws')), { mode: 'full-access', network: true, workspaceRoot: join(dir, 'ws'), writableRoots: [] });
  assert.is((await resolvePolicy({ mode: 'read-only', network: true }, dir)).network, true);
});

test('resolvePolicy keeps an allowlist as given, with deny always present', async () => {
  assert.equal((await resolvePolicy({ mode: 'read-only', network: { allow: ['api.example.com', '10.0.0.0/8:443'] } }, dir)).network, { allow: ['api.example.com', '10.0.0.0/8:443'], deny: [] });
  assert.equal((await resolvePolicy({ mode: 'workspace-write', network: { allow: ['*.example.org'], deny: ['x.example.org'] } }, dir)).network, { allow: ['*.example.org'], deny: ['x.example.org'] });
});

test('planSandbox: an allowlist needs bwrap; auto without it is unavailable, naming both reasons', async () => {
  const missing = join(dir, 'no-such-bwrap');
  const allowlist = { ...policy('workspace-write'), network: { allow: ['api.example.com'], deny: [] } };
  const needsBwrap = 'a network allowlist needs the "bwrap" backend: Node\'s permission model can only allow or refuse the whole network, not single hosts';
  assert.equal(await planSandbox(allowlist, { backend: 'auto', bwrapPath: missing }), { unavailable: `bubblewrap is not installed (${missing} not found); ${needsBwrap}` });
  assert.equal(await planSandbox(allowlist, { backend: 'node-permission', require: 'none' }), { unavailable: needsBwrap });
  assert.equal(await planSandbox(allowlist, { backend: 'none', require: 'none' }), { backend: 'none', enforcement: 'none', policy: allowlist });
});

test('resolvePolicy resolves relative paths and symlinks, and drops duplicate roots', async () => {
  const policy = await resolvePolicy({ mode: 'workspace-write', workspaceRoot: 'ws-link', writableRoots: ['ws-link/extra-link', 'extra', './extra/'] }, dir);
  assert.equal(policy, { mode: 'workspace-write', network: false, workspaceRoot: join(dir, 'ws'), writableRoots: [join(dir, 'extra')] });
});

test('resolvePolicy allows / as a read-only workspace', async () => {
  assert.is((await resolvePolicy({ mode: 'read-only', workspaceRoot: '/' }, dir)).workspaceRoot, '/');
});

const INVALID_OPTIONS: Array<[unknown, string, string]> = [
  [null, 'TypeError', 'ptc sandbox options must be an object, got null'],
  [{ backend: 'docker' }, 'RangeError', `ptc sandbox options: backend must be one of "auto", "bwrap", "node-permission", "none", got 'docker'`],
  [{ require: 'strict' }, 'RangeError', `ptc sandbox options: require must be one of "full", "partial", "none", got 'strict'`],
  [{ bwrapPath: '' }, 'TypeError', `ptc sandbox options: bwrapPath must be a non-empty path, got ''`],
  [{ carrierNodeVersion: 'latest' }, 'TypeError', `ptc sandbox options: carrierNodeVersion must be a Node version such as "v24.1.0", got 'latest'`],
  [{ bwrap: '/usr/bin/bwrap' }, 'TypeError', `ptc sandbox options: unknown field "bwrap" (value '/usr/bin/bwrap')`],
];

for (const [input, type, message] of INVALID_OPTIONS) {
  test(`resolveSandboxOptions rejects ${JSON.stringify(input)}`, () => {
    const error = thrown(() => resolveSandboxOptions(input));
    assert.is(error.name, type);
    assert.is(error.message, message);
  });
}

test('resolveSandboxOptions defaults: auto backend, partial enforcement, this Node', () => {
  assert.equal(resolveSandboxOptions({}), { backend: 'auto', require: 'partial', bwrapPath: undefined, carrierNodeVersion: process.version });
});

const VERSIONS: Array<[string, string]> = [
  ['v24.22.3', '--permission'],
  ['v23.5.0', '--permission'],
  ['v23.4.0', '--experimental-permission'],
  ['v22.13.0', '--permission'],
  ['v22.12.0', '--experimental-permission'],
  ['v20.12.0', '--experimental-permission'],
  ['v18.20.0', 'unavailable: Node v18.20.0 has no permission model (it needs Node 20 or later)'],
];

test('permissionFlag names the flag each Node version understands', () => {
  for (const [version, expected] of VERSIONS) {
    const flag = permissionFlag(version);
    assert.is(typeof flag === 'string' ? flag : `unavailable: ${flag.unavailable}`, expected, version);
  }
});

function policy(mode: ResolvedPolicy['mode']): ResolvedPolicy {
  return { mode, network: mode === 'full-access', workspaceRoot: dir, writableRoots: [] };
}

test('planSandbox: an explicit bwrap that does not exist is unavailable, never a fallback', async () => {
  const missing = join(dir, 'no-such-bwrap');
  for (const backend of ['bwrap', 'auto'] as const) {
    const plan = await planSandbox(policy('read-only'), { backend, require: 'full', bwrapPath: missing });
    assert.equal(plan, { unavailable: `bubblewrap is not installed (${missing} not found)` + (backend === 'auto' ? `; Node's permission model (backend "node-permission") enforces file rules (and on Node 25 or later network: all or nothing), not process isolation, and require is "full"` : '') });
  }
});

test('planSandbox: auto falls back to node-permission only when partial enforcement is enough', async () => {
  const missing = join(dir, 'no-such-bwrap');
  const plan = await planSandbox(policy('workspace-write'), { backend: 'auto', require: 'partial', bwrapPath: missing, carrierNodeVersion: 'v26.10.0' });
  assert.equal(plan, {
    backend: 'node-permission',
    enforcement: 'partial',
    policy: policy('workspace-write'),
    permissionFlag: '--permission',
    governsNetwork: true,
    bwrapUnavailable: `bubblewrap is not installed (${missing} not found)`,
  });
  const chosen = await planSandbox(policy('workspace-write'), { backend: 'node-permission', carrierNodeVersion: 'v20.12.0' });
  assert.equal(chosen, { backend: 'node-permission', enforcement: 'partial', policy: policy('workspace-write'), permissionFlag: '--experimental-permission', governsNetwork: false });
  // Node 25 added --allow-net: its model refuses the network unless granted.
  const governed = await planSandbox(policy('workspace-write'), { backend: 'node-permission', carrierNodeVersion: 'v26.10.0' });
  assert.is('backend' in governed && governed.backend === 'node-permission' && governed.governsNetwork, true);
});

// Node 20 to 24 have no network rule: auto must not hand a network: false policy a carrier that can
// reach every host. Naming the backend, asking for the network, or require "none" accepts it.
for (const version of ['v20.20.2', 'v22.22.0', 'v24.0.0']) {
  test(`planSandbox: auto does not fall back to node-permission on Node ${version} for a policy without network`, async () => {
    const missing = join(dir, 'no-such-bwrap');
    const options = { bwrapPath: missing, carrierNodeVersion: version };
    assert.equal(await planSandbox(policy('workspace-write'), { ...options, backend: 'auto' }), {
      unavailable: `bubblewrap is not installed (${missing} not found); the permission model of Node ${version} (backend "node-permission") cannot refuse the network (Node 25 or later can), and the policy has network: false; set backend "node-permission" to run there with the network open (the report then says network: true)`,
    });
    const open = { ...policy('workspace-write'), network: true };
    const flag = version.startsWith('v20') ? '--experimental-permission' : '--permission';
    const accepted: Array<[ResolvedPolicy, SandboxOptions]> = [
      [policy('workspace-write'), { ...options, backend: 'node-permission' }],
      [open, { ...options, backend: 'auto' }],
      [policy('workspace-write'), { ...options, backend: 'auto', require: 'none' }],
    ];
    for (const [asked, given] of accepted) {
      const plan = await planSandbox(asked, given) as SandboxPlan & { permissionFlag?: string; governsNetwork?: boolean };
      assert.is(`${plan.backend} ${plan.permissionFlag} ${plan.governsNetwork}`, `node-permission ${flag} false`);
    }
  });
}

test('planSandbox: bwrap that cannot create namespaces is unavailable with its stderr', async () => {
  const fake = join(dir, 'refusing-bwrap');
  await writeFile(fake, '#!/bin/sh\necho "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n');
  await chmod(fake, 0o755);
  const plan = await planSandbox(policy('read-only'), { backend: 'bwrap', bwrapPath: fake });
  assert.equal(plan, {
    unavailable: `bubblewrap at ${fake} cannot create a sandbox here (user namespaces refused or restricted): bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.`,
  });
});

test('planSandbox: a bwrapPath that is not executable is unavailable', async () => {
  const plan = await planSandbox(policy('read-only'), { backend: 'bwrap', bwrapPath: join(dir, 'file') });
  assert.equal(plan, { unavailable: `bubblewrap at ${join(dir, 'file')} is not an executable file` });
});

test('planSandbox: node-permission cannot meet require "full", nor an old Node', async () => {
  assert.equal(await planSandbox(policy('read-only'), { backend: 'node-permission', require: 'full' }), {
    unavailable: `Node's permission model (backend "node-permission") enforces file rules (and on Node 25 or later network: all or nothing), not process isolation, and require is "full"`,
  });
  assert.equal(await planSandbox(policy('read-only'), { backend: 'node-permission', carrierNodeVersion: 'v18.20.0' }), {
    unavailable: 'Node v18.20.0 has no permission model (it needs Node 20 or later)',
  });
});

test('planSandbox: backend "none" runs a confined mode only when require is "none"', async () => {
  assert.equal(await planSandbox(policy('read-only'), { backend: 'none', require: 'none' }), { backend: 'none', enforcement: 'none', policy: policy('read-only') });
  assert.equal(await planSandbox(policy('read-only'), { backend: 'none' }), {
    unavailable: 'sandbox backend "none" enforces nothing, but mode "read-only" requires partial enforcement (set require: "none" to run unconfined)',
  });
});

test('planSandbox: full-access needs no enforcement, whatever is required', async () => {
  for (const require of ['full', 'partial', 'none'] as const) {
    const plan = await planSandbox(policy('full-access'), { backend: 'bwrap', require, bwrapPath: join(dir, 'no-such-bwrap') });
    assert.equal(plan, { backend: 'none', enforcement: 'none', policy: policy('full-access') });
  }
});

const DENIALS: Array<[unknown, boolean]> = [
  ['EACCES', true],
  ['EROFS', true],
  ['EPERM', true],
  ['ERR_ACCESS_DENIED', true],
  ['ECONNREFUSED', true],
  ['ENETUNREACH', true],
  ["EROFS: read-only file system, open '/etc/x'", true],
  ['sh: 1: cannot create /etc/x: Read-only file system', true],
  ['touch: cannot touch /x: Permission denied', true],
  ['mount: Operation not permitted', true],
  ['Access to this API has been restricted. Use --allow-fs-write to manage permissions.', true],
  ['connect ECONNREFUSED 127.0.0.1:80', true],
  ['ENOENT', false],
  ['EEXIST: file already exists', false],
  ['XEROFS', false],
  ['', false],
  [undefined, false],
  [13, false],
];

test('isDenial recognises denial codes and texts, and nothing else', () => {
  for (const [input, expected] of DENIALS) assert.is(isDenial(input), expected, JSON.stringify(input));
});

test.run();
