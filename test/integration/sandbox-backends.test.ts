// The sandbox backends against the real thing: a Node child launched through wrapLaunch, with the
// carrier's stdio (fd 3 a pipe, its own process group), tries one operation per run and prints
// the outcome. Each row asserts the errno or code seen under bwrap, under Node's permission model
// and, as the control that proves the probe can succeed, unconfined. Every run must leave no
// process behind and, when denied, no file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { filterStdio, sendFilter } from '../../supervision/seccomp-fd.ts';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { launchCommand, type LaunchCommand } from '../../host/worker/launch.ts';
import { availableBackends, isDenial, planSandbox, resolvePolicy, wrapLaunch, type SandboxOptions, type SandboxPlan, type SandboxPolicy } from '../../host/sandbox/index.ts';
import { waitUntil } from '../helpers/runtime.ts';

const NODE = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'node');
/** Runs and deaths already caused by the test; generous, and never a speed assertion. */
const SETTLE_MS = 3_000;
const RUN_TIMEOUT_MS = 20_000;
const MARKER_PREFIX = `ptc-sbx-probe-${process.pid}-`;

/** One operation per run, named by argv; prints {outcome: 'ok' | code, detail}. */
const PROBE = String.raw`
const fs = require('node:fs'), net = require('node:net'), cp = require('node:child_process'), os = require('node:os');
const [marker, name, raw] = process.argv.slice(1);
const p = JSON.parse(raw);
const write = (path) => () => fs.writeFileSync(path, 'x');
const connect = (options) => () => new Promise((resolve, reject) => {
  const socket = net.connect(options, () => { socket.destroy(); resolve(); });
  socket.on('error', reject);
});
const cases = {
  'read /etc/hostname': () => fs.readFileSync('/etc/hostname'),
  'read a file in the host /tmp': () => fs.readFileSync(p.hostTmpFile),
  'write in the workspace': write(p.ws + '/ws-' + marker),
  'read /etc/passwd': () => fs.readFileSync('/etc/passwd'),
  'write outside': write(p.outside + '/out-' + marker),
  'write a system directory': write('/usr/out-' + marker),
  'write through a symlink out of the workspace': write(p.ws + '/link/link-' + marker),
  'write through ..': write(p.ws + '/../outside/dots-' + marker),
  'write through /proc/self/root': write('/proc/self/root' + p.outside + '/proc-' + marker),
  'write the private temp dir': write(os.tmpdir() + '/tmp-' + marker),
  'write the shared /tmp': write('/tmp/' + marker),
  'write from a child process': () => {
    const run = cp.spawnSync('sh', ['-c', 'echo x > "$1"', 'sh', p.outside + '/child-' + marker], { encoding: 'utf8' });
    if (run.error) throw run.error;
    // dash and bash word the failure differently but both end in the kernel's error text.
    if (run.status !== 0) throw Object.assign(new Error(run.stderr.trim()), { code: 'sh: ' + run.stderr.trim().split(': ').at(-1) });
  },
  'connect to 127.0.0.1 (a host TCP server)': connect({ host: '127.0.0.1', port: p.port }),
  'connect to a host Unix socket': connect({ path: p.socket }),
  'write the control channel, fd 3': () => new Promise((resolve, reject) => {
    const socket = new net.Socket({ fd: 3, readable: true, writable: true });
    socket.on('error', reject);
    socket.end(marker + '\n', resolve);
  }),
};
(async () => {
  try {
    await cases[name]();
    console.log(JSON.stringify({ outcome: 'ok' }));
  } catch (error) {
    console.log(JSON.stringify({ outcome: error.code ?? error.name, detail: error.message }));
  }
})();
`;

/** Starts `setsid --fork sleep <marker>`, a grandchild in its own session, then waits forever. */
const ESCAPEE = String.raw`
const [marker] = process.argv.slice(1);
const child = require('node:child_process').spawn('setsid', ['--fork', 'sleep', marker], { stdio: 'ignore' });
child.on('error', (error) => { console.log('error ' + error.code); process.exit(1); });
child.on('exit', () => console.log('started'));
setInterval(() => {}, 1000);
`;

// A base outside /tmp: bwrap gives the program a private /tmp, where host paths would be missing
// (ENOENT) rather than read-only, and the test wants to see the read-only answer.
let base = '';
let ws = '';
let outside = '';
let socketPath = '';
let hostTmpFile = '';
let tcp: Server;
let unix: Server;
let port = 0;
let runs = 0;
/** Every private temp directory a wrapped launch made; all must be gone at the end. */
const privateTmps: string[] = [];

test.before(async () => {
  base = await realpath(await mkdtemp('/var/tmp/ptc-sandbox-backends-'));
  // A space in the workspace path checks the quoting of NODE_OPTIONS.
  ws = join(base, 'work space');
  outside = join(base, 'outside');
  socketPath = join(base, 'host.sock');
  await mkdir(ws);
  await mkdir(outside);
  await symlink(outside, join(ws, 'link'));
  hostTmpFile = join(await mkdtemp('/tmp/ptc-sandbox-backends-'), 'visible');
  await writeFile(hostTmpFile, 'x');
  tcp = createServer((socket) => socket.end());
  unix = createServer((socket) => socket.end());
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => unix.listen(socketPath, resolve));
  port = (tcp.address() as { port: number }).port;
});

test.after(async () => {
  tcp.close();
  unix.close();
  await rm(base, { recursive: true, force: true });
  await rm(dirname(hostTmpFile), { recursive: true, force: true });
  assert.equal(markedProcesses(MARKER_PREFIX), [], 'processes left behind by the suite');
});

/** Processes whose command line contains `marker` (or satisfies it), from /proc. */
function markedProcesses(marker: string | ((cmdline: string) => boolean)): number[] {
  const matches = typeof marker === 'string' ? (cmdline: string) => cmdline.includes(marker) : marker;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (matches(readFileSync(`/proc/${entry}/cmdline`, 'latin1'))) found.push(Number(entry));
    } catch {
      // Gone between readdir and read.
    }
  }
  return found;
}

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' });
}

type Backend = 'bwrap' | 'node-permission' | 'none';

async function plan(backend: Backend, policy: SandboxPolicy, options: SandboxOptions = {}): Promise<SandboxPlan> {
  const planned = await planSandbox(await resolvePolicy(policy, ws), { backend, require: backend === 'none' ? 'none' : 'partial', ...options });
  if ('unavailable' in planned) throw new Error(`backend ${backend} is unavailable here: ${planned.unavailable}`);
  return planned;
}

interface Spawned {
  stdout: string;
  stderr: string;
  control: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Watchers {
  /** Called with everything read from stdout so far. */
  stdout?(text: string, pid: number): void;
  /** Called with everything read from the control channel so far. */
  control?(text: string, channel: Socket): void;
}

/** Spawns the wrapped launch the way host/worker/carrier.ts does, and waits for it to close. */
function launch(command: LaunchCommand, watch: Watchers = {}): Promise<Spawned> {
  return new Promise((resolve, reject) => {
    const child = spawn(command.executable, command.args, { cwd: ws, env: command.env, stdio: filterStdio(['ignore', 'pipe', 'pipe', 'pipe'], command.seccompFilter), detached: true });
    sendFilter(child, command.seccompFilter);
    const seen = { stdout: '', stderr: '', control: '' };
    const control = child.stdio[3] as Socket;
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      seen.stdout += text;
      watch.stdout?.(seen.stdout, child.pid!);
    });
    child.stderr!.setEncoding('utf8').on('data', (text: string) => (seen.stderr += text));
    control.setEncoding('utf8').on('data', (text: string) => {
      seen.control += text;
      watch.control?.(seen.control, control);
    });
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), RUN_TIMEOUT_MS);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ ...seen, code, signal });
    });
  });
}

/** Node running `script` with argv, as a carrier launch of `kind`. */
function nodeCommand(script: string, argv: string[], kind: LaunchCommand['kind'] = 'source', executable = NODE): LaunchCommand {
  return { kind, executable, args: ['-e', script, ...argv], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } };
}

async function probe(planned: SandboxPlan, name: string, kind: LaunchCommand['kind'], executable = NODE): Promise<{ outcome: string; detail?: string; control: string; marker: string }> {
  const marker = `${MARKER_PREFIX}${String(++runs).padStart(4, '0')}`;
  const params = JSON.stringify({ ws, outside, port, socket: socketPath, hostTmpFile });
  const wrapped = wrapLaunch(nodeCommand(PROBE, [marker, name, params], kind, executable), planned, { cwd: ws });
  if (wrapped.privateTmp !== undefined) privateTmps.push(wrapped.privateTmp);
  try {
    const run = await launch(wrapped.command);
    const last = run.stdout.trim().split('\n').at(-1) ?? '';
    assert.ok(last.startsWith('{'), `no outcome (exit ${run.code} ${run.signal}): ${run.stdout}${run.stderr}`);
    assert.ok(await waitUntil(() => markedProcesses(marker).length === 0, SETTLE_MS), `left running: ${markedProcesses(marker)}`);
    return { ...JSON.parse(last), control: run.control, marker };
  } finally {
    await wrapped.cleanup();
  }
}

const E = 'EROFS';
const D = 'ERR_ACCESS_DENIED';
const SKIP = '-';
const ABSENT = new Set(['ENOENT', 'sh: Directory nonexistent']);
type Column = 'bwrap read-only' | 'bwrap workspace' | 'bwrap workspace +net' | 'node-permission read-only' | 'node-permission workspace' | 'node-permission workspace +net' | 'unconfined';

const COLUMNS: Record<Column, [Backend, SandboxPolicy]> = {
  'bwrap read-only': ['bwrap', { mode: 'read-only' }],
  'bwrap workspace': ['bwrap', { mode: 'workspace-write' }],
  'bwrap workspace +net': ['bwrap', { mode: 'workspace-write', network: true }],
  'node-permission read-only': ['node-permission', { mode: 'read-only' }],
  'node-permission workspace': ['node-permission', { mode: 'workspace-write' }],
  'node-permission workspace +net': ['node-permission', { mode: 'workspace-write', network: true }],
  unconfined: ['none', { mode: 'full-access' }],
};

// Outcomes in COLUMNS order: bwrap ro, bwrap ws, bwrap ws+net, node-permission ro, node-permission ws,
// node-permission ws+net, unconfined.
const TABLE: Array<[string, string[]]> = [
  // bwrap's fresh root holds only the /etc files programs need (docs/host-view.md): the rest is absent.
  ['read /etc/hostname', ['ENOENT', 'ENOENT', 'ENOENT', 'ok', 'ok', 'ok', 'ok']],
  ['read /etc/passwd', ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok']],
  // bwrap's /tmp is private: the host's is not denied but absent; Node's model denies it.
  ['read a file in the host /tmp', ['ENOENT', 'ENOENT', SKIP, D, D, SKIP, 'ok']],
  ['write in the workspace', [E, 'ok', SKIP, D, 'ok', SKIP, 'ok']],
  // Outside the workspace is absent under bwrap (ENOENT); a system directory is there read-only.
  ['write outside', ['ENOENT', 'ENOENT', 'ENOENT', D, D, SKIP, 'ok']],
  ['write a system directory', [E, E, SKIP, D, D, SKIP, SKIP]],
  // Node checks path strings and follows a symlink that already exists: a known escape.
  ['write through a symlink out of the workspace', ['ENOENT', 'ENOENT', SKIP, D, 'ok', SKIP, 'ok']],
  ['write through ..', ['ENOENT', 'ENOENT', SKIP, D, D, SKIP, 'ok']],
  ['write through /proc/self/root', ['ENOENT', 'ENOENT', SKIP, D, D, SKIP, 'ok']],
  ['write the private temp dir', ['ok', 'ok', SKIP, 'ok', 'ok', SKIP, SKIP]],
  ['write the shared /tmp', [E, E, SKIP, D, D, SKIP, SKIP]],
  // The shell's redirection fails on the read-only mount; Node refuses to spawn at all.
  ['write from a child process', ['sh: Directory nonexistent', 'sh: Directory nonexistent', SKIP, D, D, SKIP, 'ok']],
  // Node's permission model (Node 25 and later) denies the network unless the policy grants it, all or nothing.
  ['connect to 127.0.0.1 (a host TCP server)', ['ECONNREFUSED', 'ECONNREFUSED', 'ok', D, D, 'ok', 'ok']],
  // A path socket outside what bwrap binds is absent; one inside a bound directory (the workspace)
  // would still connect (a known gap). Node's network rule covers Unix sockets too.
  ['connect to a host Unix socket', ['ENOENT', 'ENOENT', SKIP, D, D, 'ok', 'ok']],
  ['write the control channel, fd 3', ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok']],
];

const plans = new Map<Column, Promise<SandboxPlan>>();
function planFor(column: Column): Promise<SandboxPlan> {
  let planned = plans.get(column);
  if (planned === undefined) {
    planned = plan(...COLUMNS[column]);
    plans.set(column, planned);
  }
  return planned;
}

for (const [name, outcomes] of TABLE) {
  test(name, async () => {
    for (const [index, column] of (Object.keys(COLUMNS) as Column[]).entries()) {
      const expected = outcomes[index]!;
      if (expected === SKIP) continue;
      // The embedded binary takes its permission flags through NODE_OPTIONS: probe that path.
      const result = await probe(await planFor(column), name, column.startsWith('node-permission') ? 'embedded' : 'source');
      assert.is(result.outcome, expected, `${column}: ${JSON.stringify(result)}`);
      if (expected !== 'ok') {
        // Absent (ENOENT, the shell's "Directory nonexistent") is no denial: nothing refused a path that is not there.
        if (!ABSENT.has(expected)) assert.ok(isDenial(result.outcome) || isDenial(result.detail), `${column}: not recognised as a denial: ${JSON.stringify(result)}`);
        const leaked = [...files(base), ...readdirSync('/tmp')].filter((file) => file.includes(result.marker));
        assert.equal(leaked, [], `${column}: a denied write left files`);
      }
      if (name.includes('fd 3') && expected === 'ok') assert.is(result.control, `${result.marker}\n`, column);
    }
  });
}

test('node-permission through argv (node-script launches) denies the same writes', async () => {
  const planned = await plan('node-permission', { mode: 'workspace-write' });
  assert.is((await probe(planned, 'write outside', 'node-script')).outcome, D);
  assert.is((await probe(planned, 'write in the workspace', 'node-script')).outcome, 'ok');
});

test('node-permission with network: true grants it (--allow-net) on the pinned Node, and Node 20 needs no grant', async () => {
  const planned = await plan('node-permission', { mode: 'workspace-write', network: true });
  for (const name of ['connect to 127.0.0.1 (a host TCP server)', 'connect to a host Unix socket']) {
    const result = await probe(planned, name, 'embedded');
    assert.is(result.outcome, 'ok', JSON.stringify(result));
  }
  const version = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout.trim();
  const old = await plan('node-permission', { mode: 'workspace-write' }, { carrierNodeVersion: version });
  assert.is((await probe(old, 'connect to 127.0.0.1 (a host TCP server)', 'node-script', '/usr/bin/node')).outcome, /^v2[0-4]\./.test(version) ? 'ok' : D, version);
});

test('node-permission on the machine Node 20 (node-script world) uses --experimental-permission', async () => {
  const version = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout.trim();
  const planned = await plan('node-permission', { mode: 'workspace-write' }, { carrierNodeVersion: version });
  assert.is(planned.backend === 'node-permission' && planned.permissionFlag, /^v2[0-1]\./.test(version) ? '--experimental-permission' : '--permission');
  for (const kind of ['node-script', 'embedded'] as const) {
    assert.is((await probe(planned, 'write outside', kind, '/usr/bin/node')).outcome, D, `${version} ${kind}`);
    assert.is((await probe(planned, 'write in the workspace', kind, '/usr/bin/node')).outcome, 'ok', `${version} ${kind}`);
  }
});

/** Runs ESCAPEE, kills the launch's process group as the worker does, and returns (and kills) survivors. */
async function escapeeSurvivors(planned: SandboxPlan): Promise<number[]> {
  // The sleep's own argument is the marker: `1000.<digits>` seconds, unique to this run.
  const marker = `1000.${process.pid}${++runs}`;
  // Exactly the sleep: seen only after `setsid --fork` has made its session and exec'd.
  const sleeping = () => markedProcesses((cmdline) => cmdline === `sleep\0${marker}\0`);
  const wrapped = wrapLaunch(nodeCommand(ESCAPEE, [marker]), planned, { cwd: ws });
  try {
    let killed: Promise<boolean> | undefined;
    const run = await launch(wrapped.command, { stdout: (stdout, pid) => {
      if (killed !== undefined || !stdout.includes('started')) return;
      killed = waitUntil(() => sleeping().length > 0, SETTLE_MS).finally(() => process.kill(-pid, 'SIGKILL'));
    } });
    assert.ok(await killed, `the grandchild never showed up in /proc: ${run.stdout}${run.stderr}`);
    await waitUntil(() => sleeping().length === 0, SETTLE_MS);
    const survivors = sleeping();
    for (const pid of survivors) process.kill(pid, 'SIGKILL');
    return survivors;
  } finally {
    await wrapped.cleanup();
  }
}

test('bwrap: a setsid grandchild dies with the sandbox when the launch is killed (pid namespace)', async () => {
  assert.equal(await escapeeSurvivors(await plan('bwrap', { mode: 'read-only' })), []);
});

test('control: unconfined, the same setsid grandchild survives the group kill', async () => {
  assert.is((await escapeeSurvivors(await plan('none', { mode: 'full-access' }))).length, 1);
});

// What bubblewrap itself reports; the Carrier decodes it back to the signal (test/integration/hostile.test.ts).
test('bwrap: a carrier killed by a signal comes out of bwrap as exit 128+n, not a signal', async () => {
  const wrapped = wrapLaunch(nodeCommand(`process.kill(process.pid, 'SIGKILL')`, []), await plan('bwrap', { mode: 'read-only' }), { cwd: ws });
  const run = await launch(wrapped.command);
  await wrapped.cleanup();
  assert.equal([run.code, run.signal], [137, null]);
});

test('bwrap: a missing cwd fails the launch with bwrap\'s message instead of running elsewhere', async () => {
  const planned = await plan('bwrap', { mode: 'read-only' });
  const gone = join(base, 'gone');
  await mkdir(gone);
  const wrapped = wrapLaunch(nodeCommand('console.log(process.cwd())', []), planned, { cwd: gone });
  await rm(gone, { recursive: true });
  const run = await launch(wrapped.command);
  await wrapped.cleanup();
  assert.is(run.code, 1);
  // The cwd is bound into the fresh root before bwrap enters it: its source is what is missing.
  assert.match(run.stderr, `bwrap: Can't find source path ${gone}`);
});

test('bwrap is unavailable, with its own reason, where user namespaces are refused', async () => {
  // The real bwrap, run inside a sandbox that forbids creating more user namespaces.
  const refusing = join(base, 'bwrap-without-userns');
  await writeFile(refusing, '#!/bin/sh\nexec /usr/bin/bwrap --unshare-user --uid 1000 --disable-userns --ro-bind / / --dev /dev --proc /proc --unshare-pid -- /usr/bin/bwrap "$@"\n');
  await chmod(refusing, 0o755);
  const planned = await planSandbox(await resolvePolicy({ mode: 'read-only' }, ws), { backend: 'bwrap', bwrapPath: refusing });
  assert.ok('unavailable' in planned, JSON.stringify(planned));
  assert.match(planned.unavailable, `bubblewrap at ${refusing} cannot create a sandbox here (user namespaces refused or restricted): bwrap: `);
  assert.match(planned.unavailable, /namespace/i);
});

test('the real carrier (launchCommand from source) completes its handshake over fd 3 under each backend', async () => {
  for (const backend of ['bwrap', 'node-permission'] as const) {
    const wrapped = wrapLaunch(launchCommand(undefined, 64), await plan(backend, { mode: 'workspace-write' }), { cwd: ws });
    // The host ending the channel after the handshake is the carrier's signal to exit.
    const run = await launch(wrapped.command, { control: (text, channel) => text.includes('\n') && channel.end() });
    await wrapped.cleanup();
    assert.match(run.control, /^\{"t":"hello","revision":\d+,"node":"v/, `${backend}: ${run.control} ${run.stderr}`);
    assert.equal([run.code, run.signal], [0, null], `${backend}: ${run.stderr}`);
  }
});

test('availableBackends reports both backends usable here, and why bwrap is not when it is missing', async () => {
  assert.equal(await availableBackends(), { bwrap: undefined, nodePermission: undefined });
  const missing = join(base, 'no-bwrap');
  assert.equal(await availableBackends({ bwrapPath: missing, carrierNodeVersion: 'v18.0.0' }), {
    bwrap: `bubblewrap is not installed (${missing} not found)`,
    nodePermission: 'Node v18.0.0 has no permission model (it needs Node 20 or later)',
  });
});

test('cleanup removed every private temp directory', () => {
  assert.ok(privateTmps.length > 50, `${privateTmps.length} private temp directories`);
  assert.equal(privateTmps.filter((dir) => existsSync(dir)), []);
});

test.run();
