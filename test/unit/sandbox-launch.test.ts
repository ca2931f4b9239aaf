// Building the confined launch: bwrap argv for each mode and network setting, what the private
// /tmp forces to be bound back, Node's permission flags in argv or NODE_OPTIONS, and wrapLaunch's
// private temp directory and report.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LaunchCommand } from '../../host/worker/launch.ts';
import { appendNodeOptions, bwrapArgs, permissionArgs, readableRoots, wrapLaunch, type ResolvedPolicy, type SandboxPlan } from '../../host/sandbox/index.ts';

const HEAD = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
/** Without network, the host's /run (service sockets) is replaced as well. */
const HEAD_NO_NET = [...HEAD, '--tmpfs', '/run'];
const TAIL = ['--cap-drop', 'ALL', '--die-with-parent', '--new-session'];
const PRIV = '/tmp/ptc-sandbox-x';

function policy(mode: ResolvedPolicy['mode'], network: boolean, writableRoots: string[] = [], workspaceRoot = '/srv/ws'): ResolvedPolicy {
  return { mode, network, workspaceRoot, writableRoots };
}

const ARGV: Array<[string, ResolvedPolicy, string[]]> = [
  ['read-only, no network', policy('read-only', false, ['/srv/extra']), [...HEAD_NO_NET, '--bind', PRIV, PRIV, '--remount-ro', '/tmp', '--unshare-pid', '--unshare-ipc', '--unshare-net', ...TAIL]],
  ['read-only, network', policy('read-only', true), [...HEAD, '--bind', PRIV, PRIV, '--remount-ro', '/tmp', '--unshare-pid', '--unshare-ipc', ...TAIL]],
  ['workspace-write, no network', policy('workspace-write', false, ['/srv/extra']), [...HEAD_NO_NET, '--bind', '/srv/ws', '/srv/ws', '--bind', '/srv/extra', '/srv/extra', '--bind', PRIV, PRIV, '--remount-ro', '/tmp', '--unshare-pid', '--unshare-ipc', '--unshare-net', ...TAIL]],
  ['workspace-write, network', policy('workspace-write', true), [...HEAD, '--bind', '/srv/ws', '/srv/ws', '--bind', PRIV, PRIV, '--remount-ro', '/tmp', '--unshare-pid', '--unshare-ipc', ...TAIL]],
  // Parents are mounted before children, whatever order the roots were given in.
  ['nested roots', policy('workspace-write', false, ['/srv/ws/a/b', '/srv']), [...HEAD_NO_NET, '--bind', '/srv', '/srv', '--bind', '/srv/ws', '/srv/ws', '--bind', PRIV, PRIV, '--bind', '/srv/ws/a/b', '/srv/ws/a/b', '--remount-ro', '/tmp', '--unshare-pid', '--unshare-ipc', '--unshare-net', ...TAIL]],
  // The host's /tmp is writable only when it is itself a root; then it must not be remounted.
  ['/tmp as a root', policy('workspace-write', false, ['/tmp']), [...HEAD_NO_NET, '--bind', '/tmp', '/tmp', '--bind', '/srv/ws', '/srv/ws', '--bind', PRIV, PRIV, '--unshare-pid', '--unshare-ipc', '--unshare-net', ...TAIL]],
];

for (const [name, resolved, expected] of ARGV) {
  test(`bwrapArgs: ${name}`, () => {
    assert.equal(bwrapArgs(resolved, { privateTmp: PRIV }), expected);
  });
}

test('bwrapArgs binds back, read-only, what the private /tmp hides: a read-only workspace, the cwd, launch files', () => {
  const resolved = policy('read-only', false, [], '/tmp/ws');
  const args = bwrapArgs(resolved, { privateTmp: PRIV, launchPaths: ['/usr/bin/node', '/tmp/app/bootstrap.mjs'], cwd: '/tmp/ws/sub' });
  assert.equal(args.slice(HEAD_NO_NET.length, args.indexOf('--remount-ro')), [
    '--bind', PRIV, PRIV,
    '--ro-bind', '/tmp/ws', '/tmp/ws',
    '--ro-bind', '/tmp/app/bootstrap.mjs', '/tmp/app/bootstrap.mjs',
    '--ro-bind', '/tmp/ws/sub', '/tmp/ws/sub',
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

test('readableRoots: every entry of / but /proc and /dev (the host\'s processes and terminals), plus the plain devices', () => {
  const devices = ['/dev/full', '/dev/null', '/dev/random', '/dev/urandom', '/dev/zero'];
  const none = { hidden: [], exposed: [] };
  assert.equal(readableRoots(none, 'linux', () => ['usr', 'proc', 'etc', 'dev', 'tmp', 'sys']), ['/etc', '/sys', '/tmp', '/usr', ...devices]);
  const here = readableRoots();
  assert.ok(here.includes('/usr') && !here.includes('/proc') && !here.includes('/dev'), here.join(' '));
});

test('readableRoots: hidden directories go, entry by entry down to them; exposed paths inside them come back', () => {
  const devices = ['/dev/full', '/dev/null', '/dev/random', '/dev/urandom', '/dev/zero'];
  const tree: Record<string, string[]> = { '/': ['usr', 'tmp', 'var', 'proc'], '/var': ['lib', 'tmp', 'log'], '/var/tmp': ['x', 'mine'] };
  const list = (directory: string): string[] => tree[directory] ?? [];
  const scope = { hidden: ['/tmp', '/var/tmp/x'], exposed: ['/tmp/ws', '/var/tmp/x/ptc-0-1/tmp-a', '/usr/lib'] };
  assert.equal(readableRoots(scope, 'linux', list), ['/usr', '/var/lib', '/var/log', '/var/tmp/mine', ...devices, '/tmp/ws', '/var/tmp/x/ptc-0-1/tmp-a']);
  // A path inside another exposed one goes: Node 20 would deny the rest of the outer one.
  assert.equal(readableRoots({ hidden: ['/tmp'], exposed: ['/tmp/ws/boot.mjs', '/tmp/ws', '/tmp/ws'] }, 'linux', list), ['/usr', '/var', ...devices, '/tmp/ws']);
  // A directory that cannot be listed is granted nothing but what is exposed in it.
  assert.equal(readableRoots({ hidden: ['/var/tmp/x'], exposed: [] }, 'linux', (directory) => { if (directory === '/var') throw new Error('EACCES'); return list(directory); }), ['/tmp', '/usr', ...devices]);
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
  assert.is(wrapped.command.executable, '/usr/bin/bwrap');
  assert.is(wrapped.command.kind, 'node-script');
  const separator = wrapped.command.args.indexOf('--');
  // The symlinked executable under /tmp is replaced by its target, which the sandbox can see.
  assert.equal(wrapped.command.args.slice(separator + 1), [process.execPath, ...original.args]);
  assert.equal(wrapped.command.env, { ...original.env, TMPDIR: tmp, TMP: tmp, TEMP: tmp });
  assert.equal(wrapped.report, { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false });
  const options = wrapped.command.args.slice(0, separator).join(' ');
  assert.ok(options.includes(`--bind ${ws} ${ws} --ro-bind ${join(dir, 'bootstrap.mjs')} ${join(dir, 'bootstrap.mjs')} --bind ${tmp} ${tmp}`), options);
  assert.ok(options.endsWith(`--chdir ${ws}`), options);
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
  const reads = readableRoots({ hidden: ['/tmp', dir], exposed: [ws, tmp, join(dir, 'bootstrap.mjs')] }).map((root) => `--allow-fs-read=${root}`);
  assert.ok(!reads.includes('--allow-fs-read=/tmp') && reads.includes(`--allow-fs-read=${tmp}`), reads.join(' '));
  assert.equal(script.command.args, ['--permission', ...reads, `--allow-fs-write=${ws}`, `--allow-fs-write=${tmp}`, '--max-old-space-size=64', join(dir, 'bootstrap.mjs')]);
  assert.is(script.command.executable, join(dir, 'node-link'));
  assert.equal(script.report, { mode: 'workspace-write', backend: 'node-permission', enforcement: 'partial', network: true });

  const embedded = wrapLaunch(command('embedded'), plan('node-permission', 'read-only'), { tmpdir: dir });
  const embeddedTmp = embedded.privateTmp!;
  const embeddedReads = readableRoots({ hidden: ['/tmp', dir], exposed: [embeddedTmp, ws] }).map((root) => `--allow-fs-read=${root}`);
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
