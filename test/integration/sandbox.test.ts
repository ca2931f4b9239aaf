// The sandbox through the runtime, against the real backends: what a program may read, write and
// reach under each policy, what the result reports, fail-closed behaviour, and retained owners
// whose policy changes.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join, relative as relativeTo } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, RuntimeConfig, SandboxPolicy } from '../../host/index.ts';
import { spawnSync } from 'node:child_process';
import { launchUnderTest, liveProcesses, reportLocation, runtimesPerTest, unavailablePrefix, waitUntil, createTestRuntime, reportLimits } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

// Not under /tmp: bubblewrap gives the program a private /tmp, which would hide these directories
// altogether (ENOENT) instead of showing them read-only.
const root = realpathSync(mkdtempSync(join('/var/tmp', 'ptc-sandbox-')));
const workspace = join(root, 'workspace');
const outside = join(root, 'outside');
const extra = join(root, 'extra');
for (const dir of [workspace, outside, extra]) mkdirSync(dir);
symlinkSync(outside, join(workspace, 'escape'));

const runtimeWith = runtimesPerTest(test);
test.after(() => rmSync(root, { recursive: true, force: true }));

async function run(program: string, policy: SandboxPolicy | undefined, config: RuntimeConfig = {}, extraRequest: Record<string, unknown> = {}): Promise<RunResult> {
  const runtime = runtimeWith({ timeoutMs: 20_000, ...config, ...(policy ? { policy } : { policy: { mode: 'workspace-write' } }) });
  return runtime.run(runtime.resolve({ program, cwd: workspace, ...extraRequest }));
}

/** A program that tries to write each path and returns the error code per path ('ok' when it worked). */
const tryWrites = (paths: string[]) => `
  const fs = await import('node:fs');
  const codes = {};
  for (const path of ${JSON.stringify(paths)}) {
    try { fs.writeFileSync(path, 'x'); codes[path] = 'ok' } catch (error) { codes[path] = error.code }
  }
  return codes;`;

test('bwrap: the default policy writes the workspace and nothing outside it, and says so', async () => {
  const inside = join(workspace, 'inside.txt');
  const result = await run(tryWrites([inside, join(outside, 'a.txt'), join(workspace, 'escape', 'b.txt'), join(workspace, '..', 'outside', 'c.txt'), `/proc/self/root${outside}/d.txt`]), undefined);
  // Outside the workspace is absent from the sandbox's fresh root (docs/host-view.md): ENOENT,
  // which `denied` counts whether or not the host has the path (none of these exists there).
  assert.equal(valueOf(result), {
    [inside]: 'ok',
    [join(outside, 'a.txt')]: 'ENOENT',
    [join(workspace, 'escape', 'b.txt')]: 'ENOENT',
    [join(workspace, '..', 'outside', 'c.txt')]: 'ENOENT',
    [`/proc/self/root${outside}/d.txt`]: 'ENOENT',
  });
  assert.equal(result.sandbox, { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false, denied: true, memory: 'none', disk: 'watchdog', ...reportLimits(), ...reportLocation() });
  // What the sandbox shows read-only refuses the write, and that is a denial.
  const system = await run(tryWrites(['/usr/ptc-sandbox-test.txt']), undefined);
  assert.equal(valueOf(system), { '/usr/ptc-sandbox-test.txt': 'EROFS' });
  assert.is(system.sandbox.denied, true);
  assert.ok(existsSync(inside));
  assert.not.ok(existsSync(join(outside, 'a.txt')));
});

test('without a cwd a program runs in its policy\'s workspace root, and writes there', async () => {
  const make = (config: RuntimeConfig) => runtimeWith({ timeoutMs: 20_000, ...config });
  const where = "const fs = await import('node:fs'); fs.writeFileSync('here.txt', 'x'); return process.cwd()";
  // The runtime's policy, then a request's own policy, then a relative root (from this process's directory).
  const configured = make({ policy: { mode: 'workspace-write', workspaceRoot: workspace } });
  assert.is(valueOf(await configured.run(configured.resolve({ program: where }))), workspace);
  const plain = make({ policy: { mode: 'workspace-write' } });
  assert.is(valueOf(await plain.run(plain.resolve({ program: where, policy: { mode: 'workspace-write', workspaceRoot: extra } }))), extra);
  assert.ok(existsSync(join(workspace, 'here.txt')) && existsSync(join(extra, 'here.txt')));
  const relative = make({ policy: { mode: 'workspace-write', workspaceRoot: relativeTo(process.cwd(), outside) } });
  assert.is(valueOf(await relative.run(relative.resolve({ program: where }))), outside);
  // A cwd given is kept: the root is then the policy's to resolve against it, as before.
  const given = configured.resolve({ program: 'return process.cwd()', cwd: workspace });
  assert.is(given.cwd, workspace);
  assert.is(given.policy.workspaceRoot, workspace);
  rmSync(join(outside, 'here.txt'), { force: true });
});

test('denied: a denial the program swallows is still reported, and a clean run is not', async () => {
  // Under bwrap a path outside the workspace is absent (ENOENT, not a denial); a system directory
  // is there read-only. Node's permission model denies both.
  const swallowed = `const fs = await import('node:fs'); const fsp = await import('node:fs/promises');
    try { fs.writeFileSync('/usr/ptc-quiet.txt', 'x') } catch {}
    return 1`;
  const quiet = await run(swallowed, undefined);
  assert.is(valueOf(quiet), 1);
  assert.is(quiet.sandbox.denied, true);
  const viaPromise = await run(`const fsp = await import('node:fs/promises'); await fsp.writeFile('/usr/ptc-p.txt', 'x').catch(() => {}); return 2`, undefined);
  assert.is(viaPromise.sandbox.denied, true);
  const clean = await run(`const fs = await import('node:fs'); fs.writeFileSync('clean.txt', 'x'); return 3`, undefined);
  assert.is(clean.sandbox.denied, false);
  const permission = await run(swallowed, undefined, { sandbox: { backend: 'node-permission' } });
  assert.is(permission.sandbox.denied, true);
});

test('bwrap: read-only writes only the private temp directory; extra writable roots are writable', async () => {
  const readOnly = await run(`${tryWrites([join(workspace, 'ro.txt')]).replace('return codes;', '')}
    const os = await import('node:os');
    fs.writeFileSync(os.tmpdir() + '/t.txt', 'y');
    return [codes, fs.readFileSync(os.tmpdir() + '/t.txt', 'utf8'), os.tmpdir() !== '/tmp'];`, { mode: 'read-only' });
  assert.equal(valueOf(readOnly), [{ [join(workspace, 'ro.txt')]: 'EROFS' }, 'y', true]);
  assert.is(readOnly.sandbox.mode, 'read-only');
  const writable = await run(tryWrites([join(extra, 'e.txt'), join(workspace, 'w.txt')]), { mode: 'workspace-write', writableRoots: [extra] });
  assert.equal(valueOf(writable), { [join(extra, 'e.txt')]: 'ok', [join(workspace, 'w.txt')]: 'ok' });
  assert.is(writable.sandbox.denied, false);
});

test('bwrap: a child process cannot write outside either', async () => {
  // Into a directory the sandbox shows read-only; one it does not show is absent (the table above).
  const target = '/usr/ptc-child.txt';
  const result = await run(`const { execSync } = await import('node:child_process'); try { execSync('echo x > ${target}', { stdio: 'pipe' }); return 'written' } catch (error) { return String(error.stderr) }`, undefined);
  assert.match(valueOf(result), /Read-only file system/);
  assert.not.ok(existsSync(target));
  assert.is(result.sandbox.denied, true);
});

test('bwrap: network is off unless allowed', async () => {
  const server: Server = createServer((socket) => socket.end('hello'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const connect = `const net = await import('node:net'); return await new Promise((resolve) => { const s = net.connect(${port}, '127.0.0.1'); s.on('data', (d) => { resolve(String(d)); s.destroy() }); s.on('error', (e) => resolve(e.code)) })`;
  try {
    const off = await run(connect, undefined);
    assert.is(valueOf(off), 'ECONNREFUSED');
    assert.is(off.sandbox.network, false);
    assert.is(off.sandbox.denied, true);
    const on = await run(connect, { mode: 'workspace-write', network: true });
    assert.is(valueOf(on), 'hello');
    assert.is(on.sandbox.network, true);
  } finally {
    server.close();
  }
});

/** A program that starts `sleep <marker>` in a new session and reports whether it is running. */
const startDetached = (marker: string, command: string) => `
  const { spawn } = await import('node:child_process');
  const fs = await import('node:fs');
  spawn(${JSON.stringify(command)}, ['sleep', '${marker}'].slice(${command === 'sleep' ? 1 : 0}), { detached: true, stdio: 'ignore' }).unref();
  await new Promise((resolve) => setTimeout(resolve, 300));
  return fs.readdirSync('/proc').some((pid) => {
    try { return fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').includes('${marker}') } catch { return false }
  });`;

// A fractional sleep makes a unique, findable command line.
const markerFor = (base: number): string => `${base}.${process.pid}1`;

test('bwrap: the host\'s /run sockets are out of reach, with the network or without', async () => {
  const path = `/run/ptc-sandbox-${process.pid}.sock`;
  const server: Server = createServer((socket) => socket.end('hello'));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const connect = `const net = await import('node:net'); return await new Promise((resolve) => { const s = net.connect(${JSON.stringify(path)}); s.on('data', (d) => { resolve(String(d)); s.destroy() }); s.on('error', (e) => resolve(e.code)) })`;
  try {
    assert.is(valueOf(await run(connect, undefined)), 'ENOENT');
    // A network namespace does not cover sockets on the file system: /run is replaced either way.
    assert.is(valueOf(await run(connect, { mode: 'workspace-write', network: true })), 'ENOENT');
  } finally {
    server.close();
  }
});

test('bwrap: a detached grandchild in its own session dies with the run', async () => {
  const marker = markerFor(987);
  const result = await run(startDetached(marker, 'setsid'), undefined);
  assert.is(valueOf(result), true, 'the grandchild was running inside the sandbox');
  const gone = await waitUntil(() => !liveProcesses().some(({ pid }) => commandLine(pid).includes(marker)), 5_000);
  assert.ok(gone, 'the grandchild survived');
});

test('unconfined: a child that moved to its own session still dies with the run', async () => {
  const marker = markerFor(986);
  // The child is still the carrier's child when the run ends, so the kill reaches it by the tree.
  const result = await run(startDetached(marker, 'sleep'), { mode: 'full-access' });
  assert.is(valueOf(result), true, 'the child was running');
  assert.equal(result.sandbox, { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, denied: false, memory: 'none', disk: 'watchdog', ...reportLimits(), ...reportLocation() });
  const gone = await waitUntil(() => !liveProcesses().some(({ pid }) => commandLine(pid).includes(marker)), 5_000);
  assert.ok(gone, 'the detached child survived');
});

test('node-permission: partial enforcement denies outside writes and child processes', async () => {
  const config: RuntimeConfig = { sandbox: { backend: 'node-permission' } };
  const writes = await run(tryWrites([join(workspace, 'np.txt'), join(outside, 'np.txt')]), undefined, config);
  assert.equal(valueOf(writes), { [join(workspace, 'np.txt')]: 'ok', [join(outside, 'np.txt')]: 'ERR_ACCESS_DENIED' });
  // Node 25 and later refuse the network under the model (--allow-net is all or nothing); the machine's Node 20 does not.
  const carrierNode = launchUnderTest()?.kind === 'node-script' || launchUnderTest()?.kind === 'ssh' ? spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout : process.version;
  const governed = Number(/^v(\d+)/.exec(carrierNode)![1]) >= 25;
  assert.equal(writes.sandbox, { mode: 'workspace-write', backend: 'node-permission', enforcement: 'partial', network: !governed, denied: true, memory: 'none', disk: 'watchdog', ...reportLimits(), ...reportLocation() });
  const child = await run(`const { execSync } = await import('node:child_process'); try { execSync('true'); return 'spawned' } catch (error) { return error.code }`, undefined, config);
  assert.is(valueOf(child), 'ERR_ACCESS_DENIED');
});

test('fail closed: missing bubblewrap or too little enforcement is sandbox-unavailable', async () => {
  const missing = await run('return 1', undefined, { sandbox: { backend: 'bwrap', bwrapPath: join(root, 'no-bwrap') } });
  assert.is(missing.status, 'failed');
  assert.equal((missing as { failure: unknown }).failure, { kind: 'sandbox-unavailable', message: `${unavailablePrefix()}bubblewrap is not installed (${join(root, 'no-bwrap')} not found)` });
  const tooWeak = await run('return 1', undefined, { sandbox: { backend: 'node-permission', require: 'full' } });
  assert.is((tooWeak as { failure: { kind: string } }).failure.kind, 'sandbox-unavailable');
  assert.match((tooWeak as { failure: { message: string } }).failure.message, /permission model/);
  // full-access has nothing to enforce, so it runs even without bubblewrap.
  const unconfined = await run('return 1', { mode: 'full-access' }, { sandbox: { backend: 'bwrap', bwrapPath: join(root, 'no-bwrap'), require: 'full' } });
  assert.is(valueOf(unconfined), 1);
});

test('auto without bubblewrap: node-permission only where its Node can refuse the network, else sandbox-unavailable saying why', async () => {
  const missing = join(root, 'no-bwrap');
  const result = await run('return 1', undefined, { sandbox: { backend: 'auto', bwrapPath: missing } });
  const carrierNode = launchUnderTest()?.kind === 'node-script' || launchUnderTest()?.kind === 'ssh' ? spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout.trim() : process.version;
  if (Number(/^v(\d+)/.exec(carrierNode)![1]) >= 25) {
    assert.is(valueOf(result), 1);
    assert.equal([result.sandbox.backend, result.sandbox.network], ['node-permission', false]);
    return;
  }
  assert.equal((result as { failure: unknown }).failure, {
    kind: 'sandbox-unavailable',
    message: `${unavailablePrefix()}bubblewrap is not installed (${missing} not found); the permission model of Node ${carrierNode} (backend "node-permission") cannot refuse the network (Node 25 or later can), and the policy has network: false; set backend "node-permission" to run there with the network open (the report then says network: true)`,
  });
  // Asking for the network leaves nothing for the model to fail at.
  const open = await run('return 1', { mode: 'workspace-write', network: true }, { sandbox: { backend: 'auto', bwrapPath: missing } });
  assert.equal([valueOf(open), open.sandbox.backend, open.sandbox.network], [1, 'node-permission', true]);
});

test('retained owners: a policy change is refused, or starts a fresh environment when asked; a one-time run cannot see the owner', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory', policy: { mode: 'workspace-write' } });
  const owner = {};
  const go = (program: string, extra: Record<string, unknown> = {}) => runtime.run(runtime.resolve({ program, cwd: workspace, stateOwner: owner, ...extra }));
  await go('var secret = 42');
  assert.is(valueOf(await go('secret')), 42);
  const once = await go('typeof secret', { policy: { mode: 'workspace-write', network: true }, oneTime: true });
  assert.is(valueOf(once), 'undefined');
  assert.is(once.sandbox.network, true);
  assert.is(valueOf(await go('secret')), 42);
  const refused = await go('secret', { policy: { mode: 'read-only' } }).then(() => 'ran', (error: Error) => error.message);
  assert.match(refused, /^ptc run\(\): this run's sandbox policy differs from the one this stateOwner's environment started with \(mode 'workspace-write' → 'read-only'\)/);
  assert.is(valueOf(await go('secret')), 42);
  const changed = await go('typeof secret', { policy: { mode: 'read-only' }, onPolicyChange: 'replace' });
  assert.is(valueOf(changed), 'undefined');
  assert.equal(changed.environment, { fresh: true, replaced: 'the sandbox policy changed (mode \'workspace-write\' → \'read-only\'), so the previous environment was ended (onPolicyChange: "replace")' });
  assert.is(changed.sandbox.mode, 'read-only');
});

test('a policy naming a missing writable root is refused before anything runs', async () => {
  const runtime = runtimeWith({});
  // A remote launch resolves the paths over there: the far side refuses it, before any carrier starts.
  const remote = reportLocation().location === 'remote';
  const refused = await runtime.run(runtime.resolve({ program: 'return 1', cwd: workspace, policy: { mode: 'workspace-write', writableRoots: [join(root, 'missing')] } })).then(
    (result) => (remote && result.status === 'failed' && result.failure.kind === 'worker-exit' ? result.failure.message : 'ran'),
    (error: Error) => (remote ? 'threw' : error.message),
  );
  assert.match(refused, /writableRoots/);
  assert.match(refused, /missing/);
  assert.not.ok(existsSync(join(root, 'missing')));
});

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

test.run();
