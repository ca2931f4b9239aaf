// Building the confined launch: bwrap argv for each mode and network setting, what the private
// /tmp forces to be bound back, Node's permission flags in argv or NODE_OPTIONS, and wrapLaunch's
// private temp directory and report.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LaunchCommand } from '../../../../host/worker/launch.ts';
import { seccompFilter } from '../../../../supervision/seccomp.ts';
import type { SystemEntry } from '../../../../supervision/bwrap.ts';
import { privateMountPrefix } from '../../../../supervision/private-mounts.ts';
import { appendNodeOptions, bwrapArgs, permissionArgs, readableRoots, wrapLaunch, type ResolvedPolicy, type SandboxPlan } from '../../../../host/sandbox/index.ts';
import { journalKeyDirectory } from '../../../../host/sandbox/private-directory.ts';

/** /dev/shm: the one RAM-backed place a program may write, 64 MiB, world-writable like the host's. */
const SHM = ['--perms', '1777', '--size', String(64 * 1024 * 1024), '--tmpfs', '/dev/shm'];
/** /proc read-only: root would otherwise write sysctls (kernel.core_pattern) as host root. */
const HEAD = ['--dev', '/dev', ...SHM, '--proc', '/proc', '--remount-ro', '/proc'];
/** The fresh root's first level: a private /tmp, and the sandbox's own /run instead of the host's
 * (service sockets), with the network or without. */
const BASE = ['--tmpfs', '/tmp', '--tmpfs', '/run'];
/** The unsized tmpfs mounts (/dev, /run) and the fresh root are read-only once their mount points exist. */
const RO = ['--remount-ro', '/dev', '--remount-ro', '/run', '--remount-ro', '/'];
/** Nested user namespaces and mounts are refused by the seccomp filter. */
const NS = ['--unshare-pid', '--unshare-ipc'];
/** The seccomp filter arrives on fd 4 (supervision/seccomp.ts). */
const TAIL = ['--cap-drop', 'ALL', '--die-with-parent', '--new-session', '--seccomp', '4'];
const PRIV = '/tmp/ptc-sandbox-x';
/** The private temp directory: a 512 MiB tmpfs of the sandbox's own over the host directory. */
const TMP = ['--perms', '0700', '--size', String(512 * 1024 * 1024), '--tmpfs', PRIV];

function policy(mode: ResolvedPolicy['mode'], network: boolean, writableRoots: string[] = [], workspaceRoot = '/srv/ws'): ResolvedPolicy {
  return { mode, network, workspaceRoot, writableRoots };
}

const ARGV: Array<[string, ResolvedPolicy, string[]]> = [
  // The read-only workspace is bound read-only: nothing of the host is there unless bound.
  ['read-only, no network', policy('read-only', false, ['/srv/extra']), [...HEAD, ...BASE, '--ro-bind', '/srv/ws', '/srv/ws', ...TMP, '--remount-ro', '/tmp', ...RO, ...NS, '--unshare-net', ...TAIL]],
  ['read-only, network', policy('read-only', true), [...HEAD, ...BASE, '--ro-bind', '/srv/ws', '/srv/ws', ...TMP, '--remount-ro', '/tmp', ...RO, ...NS, ...TAIL]],
  ['workspace-write, no network', policy('workspace-write', false, ['/srv/extra']), [...HEAD, ...BASE, '--bind', '/srv/ws', '/srv/ws', '--bind', '/srv/extra', '/srv/extra', ...TMP, '--remount-ro', '/tmp', ...RO, ...NS, '--unshare-net', ...TAIL]],
  ['workspace-write, network', policy('workspace-write', true), [...HEAD, ...BASE, '--bind', '/srv/ws', '/srv/ws', ...TMP, '--remount-ro', '/tmp', ...RO, ...NS, ...TAIL]],
  // Parents are mounted before children, whatever order the roots were given in.
  ['nested roots', policy('workspace-write', false, ['/srv/ws/a/b', '/srv']), [...HEAD, '--tmpfs', '/tmp', '--bind', '/srv', '/srv', '--tmpfs', '/run', '--bind', '/srv/ws', '/srv/ws', ...TMP, '--bind', '/srv/ws/a/b', '/srv/ws/a/b', '--remount-ro', '/tmp', ...RO, ...NS, '--unshare-net', ...TAIL]],
  // The host's /tmp is writable only when it is itself a root; then it must not be remounted.
  ['/tmp as a root', policy('workspace-write', false, ['/tmp']), [...HEAD, '--tmpfs', '/tmp', '--bind', '/tmp', '/tmp', '--tmpfs', '/run', '--bind', '/srv/ws', '/srv/ws', ...TMP, ...RO, ...NS, '--unshare-net', ...TAIL]],
];

// With the network, the resolver's directory under /run comes back read-only, after the /run it lies in; without, it has no use.
ARGV.push(['network, resolv.conf under /run', policy('read-only', true), [...HEAD, ...BASE, '--ro-bind', '/srv/ws', '/srv/ws', ...TMP, '--ro-bind', '/run/systemd/resolve', '/run/systemd/resolve', '--remount-ro', '/tmp', ...RO, ...NS, ...TAIL]]);
ARGV.push(['no network, resolv.conf under /run', policy('read-only', false), [...HEAD, ...BASE, '--ro-bind', '/srv/ws', '/srv/ws', ...TMP, '--remount-ro', '/tmp', ...RO, ...NS, '--unshare-net', ...TAIL]]);

for (const [name, resolved, expected] of ARGV) {
  test(`bwrapArgs: ${name}`, () => {
    const resolver = name.includes('resolv.conf') ? { resolver: '/run/systemd/resolve' } : {};
    assert.equal(bwrapArgs(resolved, { privateTmp: PRIV, ...resolver }), expected);
  });
}

test('bwrapArgs builds the root from the system entries: directories and files bound read-only, links made anew, a link elsewhere bound as its content', () => {
  const system: SystemEntry[] = [
    { path: '/usr', kind: 'bind' },
    { path: '/bin', kind: 'symlink', target: '/usr/bin' },
    { path: '/etc/passwd', kind: 'bind' },
    { path: '/etc/resolv.conf', kind: 'bind', source: '/var/lib/resolv/resolv.conf' },
  ];
  const args = bwrapArgs(policy('workspace-write', false), { system, privateTmp: PRIV });
  assert.equal(args.slice(HEAD.length, args.indexOf('--bind')), [
    '--ro-bind', '/usr', '/usr',
    '--symlink', '/usr/bin', '/bin',
    '--tmpfs', '/tmp',
    '--tmpfs', '/run',
    '--ro-bind', '/etc/passwd', '/etc/passwd',
    '--ro-bind', '/var/lib/resolv/resolv.conf', '/etc/resolv.conf',
  ]);
  // Nothing else of the host: no bind of / and nothing from the rest of /etc.
  assert.not.ok(args.some((arg) => arg === '/' && args[args.indexOf(arg) - 1] === '--ro-bind'), args.join(' '));
});

test('bwrapArgs binds, read-only, what the program may read and no system directory shows: a read-only workspace, the cwd, launch files', () => {
  const resolved = policy('read-only', false, [], '/tmp/ws');
  const system: SystemEntry[] = [{ path: '/usr', kind: 'bind' }];
  const args = bwrapArgs(resolved, { system, privateTmp: PRIV, launchPaths: ['/usr/bin/node', '/opt/node/bin/node', '/tmp/app/bootstrap.mjs'], cwd: '/tmp/ws/sub' });
  assert.equal(args.slice(HEAD.length, args.indexOf('--remount-ro', HEAD.length)), [
    '--ro-bind', '/usr', '/usr',
    ...BASE,
    '--ro-bind', '/tmp/ws', '/tmp/ws',
    ...TMP,
    '--ro-bind', '/tmp/app/bootstrap.mjs', '/tmp/app/bootstrap.mjs',
    '--ro-bind', '/tmp/ws/sub', '/tmp/ws/sub',
    '--ro-bind', '/opt/node/bin/node', '/opt/node/bin/node',
  ]);
  assert.equal(args.slice(-2), ['--chdir', '/tmp/ws/sub']);
});

test('bwrapArgs does not bind read-only what a writable root already shows', () => {
  const resolved = policy('workspace-write', false, [], '/tmp/ws');
  const args = bwrapArgs(resolved, { privateTmp: PRIV, launchPaths: ['/tmp/ws/tool'], cwd: '/tmp/ws' });
  assert.not.ok(args.includes('--ro-bind', 1), args.join(' '));
});

test('permissionArgs: one read grant per root, one write grant per path, the Node 20 flag quiets its warning', () => {
  assert.equal(permissionArgs('--permission', ['/srv/ws', '/srv/ws', PRIV], ['/etc', '/srv']), ['--permission', '--allow-fs-read=/etc', '--allow-fs-read=/srv', '--allow-fs-write=/srv/ws', `--allow-fs-write=${PRIV}`]);
  assert.equal(permissionArgs('--experimental-permission', [], ['/usr']), ['--experimental-permission', '--allow-fs-read=/usr', '--disable-warning=ExperimentalWarning']);
});

test('readableRoots: every entry of / but /proc and /dev (the host\'s processes and terminals), plus the plain devices and the carrier\'s own fdinfo', () => {
  const devices = ['/dev/full', '/dev/null', '/dev/random', '/dev/urandom', '/dev/zero'];
  const none = { hidden: [], exposed: [] };
  assert.equal(readableRoots(none, 'linux', () => ['usr', 'proc', 'etc', 'dev', 'tmp', 'sys']), ['/etc', '/sys', '/tmp', '/usr', ...devices, '/proc/self/fdinfo']);
  const here = readableRoots();
  assert.ok(here.includes('/usr') && !here.includes('/proc') && !here.includes('/dev'), here.join(' '));
});

test('readableRoots: hidden directories go, entry by entry down to them; exposed paths inside them come back', () => {
  const devices = ['/dev/full', '/dev/null', '/dev/random', '/dev/urandom', '/dev/zero'];
  const tree: Record<string, string[]> = { '/': ['usr', 'tmp', 'var', 'proc'], '/var': ['lib', 'tmp', 'log'], '/var/tmp': ['x', 'mine'] };
  const list = (directory: string): string[] => tree[directory] ?? [];
  const scope = { hidden: ['/tmp', '/var/tmp/x'], exposed: ['/tmp/ws', '/var/tmp/x/ptc-0-1/tmp-a', '/usr/lib'] };
  assert.equal(readableRoots(scope, 'linux', list), ['/usr', '/var/lib', '/var/log', '/var/tmp/mine', ...devices, '/tmp/ws', '/var/tmp/x/ptc-0-1/tmp-a', '/proc/self/fdinfo']);
  // A path inside another exposed one goes: Node 20 would deny the rest of the outer one.
  assert.equal(readableRoots({ hidden: ['/tmp'], exposed: ['/tmp/ws/boot.mjs', '/tmp/ws', '/tmp/ws'] }, 'linux', list), ['/usr', '/var', ...devices, '/tmp/ws', '/proc/self/fdinfo']);
  // A directory that cannot be listed is granted nothing but what is exposed in it.
  assert.equal(readableRoots({ hidden: ['/var/tmp/x'], exposed: [] }, 'linux', (directory) => { if (directory === '/var') throw new Error('EACCES'); return list(directory); }), ['/tmp', '/usr', ...devices, '/proc/self/fdinfo']);
});

test('appendNodeOptions keeps existing options and quotes what Node would split', () => {
  assert.is(appendNodeOptions('--max-old-space-size=64', ['--permission', '--allow-fs-write=/a b', '--allow-fs-write=/q"\\']), '--max-old-space-size=64 --permission "--allow-fs-write=/a b" "--allow-fs-write=/q\\"\\\\"');
  assert.is(appendNodeOptions(undefined, ['--permission']), '--permission');
  assert.is(appendNodeOptions('  ', ['--permission']), '--permission');
});

let dir = '';
let ws = '';
test.before(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'ptc-sandbox-launch-')));
  ws = join(dir, 'ws');
  await mkdir(ws);
  await writeFile(join(dir, 'bootstrap.mjs'), '');
  await symlink(process.execPath, join(dir, 'node-link'));
});
test.after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function command(kind: LaunchCommand['kind']): LaunchCommand {
  return kind === 'embedded'
    ? { kind, executable: '/opt/ptc', args: [], env: { PATH: '/usr/bin', PTC_CARRIER: '1', NODE_OPTIONS: '--max-old-space-size=64' } }
    : { kind, executable: join(dir, 'node-link'), args: ['--max-old-space-size=64', join(dir, 'bootstrap.mjs')], env: { PATH: '/usr/bin', TMPDIR: '/tmp' } };
}

function plan(backend: SandboxPlan['backend'], mode: ResolvedPolicy['mode'] = 'workspace-write', { network = false, governsNetwork = false } = {}): SandboxPlan {
  const resolved = { mode, network, workspaceRoot: ws, writableRoots: [] };
  if (backend === 'bwrap') return { backend, enforcement: 'full', policy: resolved, bwrapPath: '/usr/bin/bwrap' };
  if (backend === 'node-permission') return { backend, enforcement: 'partial', policy: resolved, permissionFlag: '--permission', governsNetwork };
  return { backend, enforcement: 'none', policy: { ...resolved, mode: 'full-access', network: true } };
}

test('wrapLaunch with backend none returns the launch unchanged and creates nothing', async () => {
  const original = command('node-script');
  const wrapped = wrapLaunch(original, plan('none'), { tmpdir: dir });
  assert.is(wrapped.command, original);
  assert.is(wrapped.privateTmp, undefined);
  assert.equal(wrapped.report, { mode: 'full-access', backend: 'none', enforcement: 'none', network: true });
  await wrapped.cleanup();
});

test('wrapLaunch under bwrap: bwrap runs the command after --, with a private temp directory', async () => {
  const original = command('node-script');
  const wrapped = wrapLaunch(original, plan('bwrap'), { tmpdir: dir, cwd: ws });
  const tmp = wrapped.privateTmp!;
  assert.match(tmp.slice(dir.length), new RegExp(`^/ptc-${process.getuid!()}-${process.pid}-\\d+-\\d+-[0-9a-f]+-[^/-]+/tmp-[^/]+$`));
  assert.ok(existsSync(tmp), tmp);
  // bwrap runs inside a mount namespace private from the host's where unshare can make one.
  const prefix = privateMountPrefix();
  const bwrapAt = prefix === undefined ? -1 : prefix.args.length;
  assert.is(wrapped.command.executable, prefix?.executable ?? '/usr/bin/bwrap');
  if (prefix !== undefined) assert.equal(wrapped.command.args.slice(0, bwrapAt + 1), [...prefix.args, '/usr/bin/bwrap']);
  assert.is(wrapped.command.kind, 'node-script');
  const separator = wrapped.command.args.indexOf('--', bwrapAt + 1);
  // The symlinked executable under /tmp is replaced by its target, which the sandbox can see.
  assert.equal(wrapped.command.args.slice(separator + 1), [process.execPath, ...original.args]);
  assert.equal(wrapped.command.env, { ...original.env, TMPDIR: tmp, TMP: tmp, TEMP: tmp });
  assert.equal(wrapped.report, { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false });
  const options = wrapped.command.args.slice(bwrapAt + 1, separator).join(' ');
  assert.ok(options.includes(`--ro-bind ${join(dir, 'bootstrap.mjs')} ${join(dir, 'bootstrap.mjs')} --bind ${ws} ${ws} --perms 0700 --size 536870912 --tmpfs ${tmp}`), options);
  assert.ok(options.endsWith(`--chdir ${ws}`), options);
  // The spawn hands bwrap this filter on the fd that --seccomp names.
  assert.equal(wrapped.command.seccompFilter, seccompFilter());
  await wrapped.cleanup();
  assert.not.ok(existsSync(tmp));
  await wrapped.cleanup();
});

test('wrapLaunch under node-permission on a Node whose model governs the network (25+): off unless allowed, and the report says so', async () => {
  const off = wrapLaunch(command('node-script'), plan('node-permission', 'workspace-write', { governsNetwork: true }), { tmpdir: dir });
  assert.not.ok(off.command.args.includes('--allow-net'));
  assert.equal(off.report, { mode: 'workspace-write', backend: 'node-permission', enforcement: 'partial', network: false });
  const on = wrapLaunch(command('node-script'), plan('node-permission', 'workspace-write', { network: true, governsNetwork: true }), { tmpdir: dir });
  const flags = on.command.args.slice(0, -2);
  assert.equal(flags.slice(-2), ['--allow-net', '--disable-warning=ExperimentalWarning']);
  assert.equal(on.report, { mode: 'workspace-write', backend: 'node-permission', enforcement: 'partial', network: true });
  await Promise.all([off.cleanup(), on.cleanup()]);
});

test('wrapLaunch under node-permission: flags before the script for a Node, in NODE_OPTIONS for the embedded binary', async () => {
  const script = wrapLaunch(command('node-script'), plan('node-permission'), { tmpdir: dir });
  const tmp = script.privateTmp!;
  // The shared temp directories are hidden; the run's own directory, workspace and script come back.
  // The Node that runs it is a launch path too: under /tmp when the checkout is (a CI clone in /tmp).
  // The journals' key directory, when this user has one, is hidden too (test/attack/host-trust.test.ts).
  const keys = existsSync(journalKeyDirectory()) ? [realpathSync(journalKeyDirectory())] : [];
  const reads = readableRoots({ hidden: ['/tmp', dir, ...keys], exposed: [ws, tmp, realpathSync(join(dir, 'node-link')), join(dir, 'bootstrap.mjs')] }).map((root) => `--allow-fs-read=${root}`);
  assert.ok(!reads.includes('--allow-fs-read=/tmp') && reads.includes(`--allow-fs-read=${tmp}`), reads.join(' '));
  assert.equal(script.command.args, ['--permission', ...reads, `--allow-fs-write=${ws}`, `--allow-fs-write=${tmp}`, '--max-old-space-size=64', join(dir, 'bootstrap.mjs')]);
  assert.is(script.command.executable, join(dir, 'node-link'));
  assert.equal(script.report, { mode: 'workspace-write', backend: 'node-permission', enforcement: 'partial', network: true });

  const embedded = wrapLaunch(command('embedded'), plan('node-permission', 'read-only'), { tmpdir: dir });
  const embeddedTmp = embedded.privateTmp!;
  const embeddedReads = readableRoots({ hidden: ['/tmp', dir, ...keys], exposed: [embeddedTmp, ws] }).map((root) => `--allow-fs-read=${root}`);
  assert.equal(embedded.command.args, []);
  assert.equal(embedded.command.env, {
    PATH: '/usr/bin',
    PTC_CARRIER: '1',
    NODE_OPTIONS: `--max-old-space-size=64 --permission ${embeddedReads.join(' ')} --allow-fs-write=${embeddedTmp}`,
    TMPDIR: embeddedTmp,
    TMP: embeddedTmp,
    TEMP: embeddedTmp,
  });
  await script.cleanup();
  await embedded.cleanup();
  assert.not.ok(existsSync(tmp) || existsSync(embeddedTmp));
});

test.run();
