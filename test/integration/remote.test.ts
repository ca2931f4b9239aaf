// Remote carriers over a real OpenSSH server (test/helpers/sshd.sh; .ci/run starts it): bootstrap
// delivery, the failures that name the remote problem, the far side's clean-up when the host or
// the ssh client dies, and the relay's framing. The integration suites also run whole over the ssh
// launch (test/run.ts); this suite covers what only a remote launch has. launch: source only.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRuntime, PROTOCOL_REVISION, type RunResult, type RuntimeConfig } from '../../host/index.ts';
import { childrenOf, liveProcesses, repoRoot, sshLaunch, sshServer, waitUntil, withoutWarm, reportLimits } from '../helpers/runtime.ts';
import { failureOf } from '../helpers/assert.ts';

const server = sshServer();
const fixtures = join(repoRoot, 'test/fixtures/remote');
/** Time for deaths already caused on the far side to finish; not a speed assertion. */
const SETTLE_MS = 5_000;

async function run(program: string, config: RuntimeConfig = {}, request: Record<string, unknown> = {}): Promise<RunResult> {
  const runtime = createRuntime({ launch: sshLaunch(), policy: { mode: 'full-access' }, prestartCarrier: false, ...config });
  try {
    return await runtime.run(runtime.resolve({ program, timeoutMs: 30_000, ...request }));
  } finally {
    await runtime.dispose();
  }
}

function alive(pid: number): boolean {
  return liveProcesses().some((entry) => entry.pid === pid);
}

/** This process's children whose command line contains `text` (other hosts on the machine have theirs). */
function ownChildrenWith(text: string): number[] {
  const mine = new Set(childrenOf(process.pid).map((child) => child.pid));
  return processesWith(text).filter((pid) => mine.has(pid));
}

/** The ssh clients of this process that carry a relay's channel. */
function relayClients(): number[] {
  return ownChildrenWith('--relay').filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('ssh'));
}

/** This process's ssh master connections (ssh -M, their control socket in a ptc-ssh- directory). */
function sshMasters(): number[] {
  return ownChildrenWith('ptc-ssh-').filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('-M'));
}

/** The control socket an ssh process of this host names (-S). */
function controlSocket(pid: number): string | undefined {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  return args[args.indexOf('-S') + 1];
}

/** How messages name the test server's launch. */
function describeServer(): string {
  return `ssh ${server!.destination} (port ${server!.port})`;
}

/** The session processes of this test's sshd: the children of its listener (whose command line names its directory). */
function sshdSessions(): number[] {
  const listeners = processesWith(`${server!.dir}/sshd_config`).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sshd'));
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((entry) => {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      return listeners.includes(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      return false;
    }
  }).map(Number);
}

/** Processes whose command line contains `text` (the relays and ssh clients of this test). */
function processesWith(text: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((entry) => {
    try {
      return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text);
    } catch {
      return false;
    }
  }).map(Number);
}

/** argv: evil good cached. Swaps the evil file in after a fifth of the opens of the good one, and back after each of its own (see its test).
 * Not half: a start opens the file several times (check, probe, relay), and at one in two all 20 starts
 * could meet a swap, leaving no start to show the race was survivable. */
const SWAPPER = `
import ctypes, os, random, struct, sys, time
evil, good, cached = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
IN_OPEN = 0x20
if fd < 0 or libc.inotify_add_watch(fd, os.path.dirname(cached).encode(), IN_OPEN) < 0:
    sys.exit('inotify: ' + os.strerror(ctypes.get_errno()))
open(cached + '.watching', 'w').close()
name = os.path.basename(cached).encode()
evil_inode = os.stat(evil).st_ino
end = time.monotonic() + 180
while time.monotonic() < end:
    data = os.read(fd, 65536)
    offset = 0
    while offset < len(data):
        wd, mask, cookie, length = struct.unpack_from('iIII', data, offset)
        entry = data[offset + 16:offset + 16 + length].rstrip(b'\\0')
        offset += 16 + length
        if entry != name:
            continue
        try:
            is_evil = os.stat(cached).st_ino == evil_inode
        except FileNotFoundError:
            continue
        if is_evil or random.random() < 0.2:
            os.link(good if is_evil else evil, cached + '.swap')
            os.rename(cached + '.swap', cached)
`;

if (server === undefined) {
  test('remote suite skipped: no sshd (eval "$(bash test/helpers/sshd.sh start)")', () => {});
} else {
  const cache = join(server.dir, 'cache', 'ptc');
  const bootstrap = readFileSync(join(repoRoot, 'dist/bootstrap.mjs'));
  const cached = join(cache, `bootstrap-${createHash('sha256').update(bootstrap).digest('hex')}.mjs`);

  test('a missing bootstrap is uploaded to the content-addressed cache, then reused', async () => {
    rmSync(cache, { recursive: true, force: true });
    const first = await run('return process.version');
    assert.equal(withoutWarm(first), { status: 'ok', value: readFileSync('/proc/self/exe') && (await nodeVersion()), output: [], sandbox: { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, location: 'remote', denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() } });
    assert.ok(readFileSync(cached).equals(bootstrap), 'the cached bootstrap differs from dist/bootstrap.mjs');
    const { ino, mtimeMs } = statSync(cached);
    assert.ok((await run('return 2')).status === 'ok');
    assert.equal({ ino: statSync(cached).ino, mtimeMs: statSync(cached).mtimeMs }, { ino, mtimeMs }, 'the bootstrap was uploaded again');
  });

  test('a cached bootstrap changed since it was checked is refused before it runs, then replaced', async () => {
    const runtime = createRuntime({ launch: sshLaunch(), policy: { mode: 'full-access' }, prestartCarrier: false });
    try {
      const spec = runtime.resolve({ program: 'return 1', timeoutMs: 30_000 });
      assert.is((await runtime.run(spec)).status, 'ok');
      const marker = join(server.dir, 'tampered-ran');
      writeFileSync(cached, `require('fs').writeFileSync(${JSON.stringify(marker)}, '')`);
      const refused = failureOf(await runtime.run(spec));
      assert.is(refused.kind, 'worker-exit');
      assert.match(String(refused.message), new RegExp(`^ssh root@127\\.0\\.0\\.1 \\(port ${server.port}\\) ended \\(exit code 65\\) before the relay started: the bootstrap ${cached.replace(/[.]/g, '\\.')} has sha256 [0-9a-f]{64}, expected [0-9a-f]{64}`));
      assert.not.ok(existsSync(marker), 'the changed bootstrap ran');
      // The next run checks the cache again and uploads the bootstrap anew.
      assert.is((await runtime.run(spec)).status, 'ok');
      assert.ok(readFileSync(cached).equals(bootstrap));
    } finally {
      await runtime.dispose();
    }
  });

  // The far side's loader hashes the cached bootstrap and then runs it: a file swapped between the
  // two would run unverified and unconfined (the relay, the probe) or as the carrier. A swapper
  // replaces the file again and again, with one that leaves a mark when it runs and back.
  test('a bootstrap swapped in a loop during many starts never runs: only the bytes that were verified run', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ptc-remote-swap-'));
    const marker = join(workspace, 'unverified-ran');
    // Next to the cache, so that a hard link can reach it.
    const evil = join(cache, '..', 'swap-evil.mjs');
    const good = join(cache, '..', 'swap-good.mjs');
    writeFileSync(evil, `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(marker)}, JSON.stringify(process.argv.slice(2)) + '\\n');\n`);
    writeFileSync(good, bootstrap);
    mkdirSync(cache, { recursive: true });
    copyFileSync(good, cached);
    // The swapper watches the cache directory (inotify) and swaps right after a reader opens the
    // file: after an open of the good file, at random a fifth of the time, the evil one goes in for
    // the next reader; after an open of the evil one, the good one comes back. A hard link then a rename, so
    // each swap is atomic and every read sees one whole file or the other. It stops itself after
    // 180 s and is killed when the starts are done.
    const swapper = spawn('python3', ['-c', SWAPPER, evil, good, cached], { stdio: ['ignore', 'ignore', 'inherit'] });
    await waitUntil(() => existsSync(`${cached}.watching`), SETTLE_MS);
    const runtime = createRuntime({ launch: sshLaunch(), policy: { mode: 'workspace-write', workspaceRoot: workspace }, prestartCarrier: false });
    const outcomes: string[] = [];
    try {
      const spec = runtime.resolve({ program: 'return 6 * 7', cwd: workspace, timeoutMs: 30_000 });
      for (let start = 0; start < 20; start++) {
        const result = await runtime.run(spec);
        outcomes.push(result.status === 'ok' ? `ok ${JSON.stringify(result.value)}` : result.failure.kind);
      }
    } finally {
      outcomes.push(swapper.exitCode === null ? 'swapper running' : `swapper exited ${swapper.exitCode}`);
      swapper.kill('SIGKILL');
      await new Promise((resolve) => (swapper.exitCode !== null || swapper.signalCode !== null ? resolve(undefined) : swapper.once('close', resolve)));
      await runtime.dispose();
      copyFileSync(good, cached);
      rmSync(`${cached}.swap`, { force: true });
      rmSync(`${cached}.watching`, { force: true });
      for (const file of [evil, good]) rmSync(file, { force: true });
    }
    try {
      assert.not.ok(existsSync(marker), `unverified bootstrap bytes ran ${existsSync(marker) ? readFileSync(marker, 'utf8').trim().split('\n').length : 0} times, as: ${existsSync(marker) ? readFileSync(marker, 'utf8').replace(/\n/g, ' ') : ''} (${outcomes.join(', ')})`);
      // The race was on: some starts met the good file throughout and ran the program.
      assert.ok(outcomes.includes('ok 42'), outcomes.join(', '));
      assert.is(outcomes.pop(), 'swapper running');
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });

  test('the far side enforces the policy with its own bubblewrap, and says so', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ptc-remote-ws-'));
    try {
      const result = await run(`
        const fs = await import('node:fs');
        fs.writeFileSync('inside.txt', 'ok');
        try { fs.writeFileSync('/etc/ptc-remote-denied', 'x'); return 'escaped'; } catch (error) { return error.code; }
      `, { policy: { mode: 'workspace-write', workspaceRoot: workspace } }, { cwd: workspace });
      assert.equal(withoutWarm(result), { status: 'ok', value: 'EROFS', output: [], sandbox: { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false, location: 'remote', denied: true, memory: 'none', disk: 'watchdog', ...reportLimits() } });
      assert.is(readFileSync(join(workspace, 'inside.txt'), 'utf8'), 'ok');
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });

  test('Image.fromFile reads the file on the far side, under its sandbox: a file only the far side sees', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ptc-remote-image-'));
    const png = readFileSync(join(repoRoot, 'test/fixtures/images/rgb-300x7.png')).toString('base64');
    try {
      // The far side's bubblewrap gives the carrier a /dev/shm of its own: the host has no such file.
      const result = await run(`
        const fs = await import('node:fs');
        fs.writeFileSync('/dev/shm/only-there.png', Buffer.from(${JSON.stringify(png)}, 'base64'));
        const image = await Image.fromFile('/dev/shm/only-there.png');
        inspect(image);
        return [image.width, image.height, image.path];
      `, { policy: { mode: 'workspace-write', workspaceRoot: workspace } }, { cwd: workspace });
      assert.ok(!existsSync('/dev/shm/only-there.png'), 'the file leaked to the host');
      assert.is(result.status, 'ok', JSON.stringify(result));
      const ok = result as Extract<RunResult, { status: 'ok' }>;
      assert.equal(ok.value, [300, 7, '/dev/shm/only-there.png']);
      assert.equal(ok.output.map((entry) => (entry.type === 'image' ? { ...entry, attachmentId: '<id>' } : entry)), [{ type: 'image', attachmentId: '<id>', path: '/dev/shm/only-there.png', width: 300, height: 7 }]);
      assert.is(ok.sandbox.location, 'remote');
      const notImage = failureOf(await run(`
        (await import('node:fs')).writeFileSync('/dev/shm/not-an-image.png', 'hello');
        await Image.fromFile('/dev/shm/not-an-image.png');
      `, { policy: { mode: 'workspace-write', workspaceRoot: workspace } }, { cwd: workspace }));
      assert.is(notImage.kind, 'exception');
      assert.match(notImage.message as string, /^Image\.fromFile: "\/dev\/shm\/not-an-image\.png" is not a PNG, JPEG, GIF or WebP/);
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });

  test('a preinstalled bootstrap of another revision fails naming both revisions', async () => {
    const result = await run('return 1', { launch: sshLaunch({ bootstrapPath: join(fixtures, 'old-bootstrap.mjs') }) });
    assert.equal(failureOf(result), {
      kind: 'worker-exit',
      message: `ssh ${server.destination} (port ${server.port}): the bootstrap ${join(fixtures, 'old-bootstrap.mjs')} speaks protocol revision 1, this ptc speaks revision ${PROTOCOL_REVISION}; install the matching bootstrap.mjs or leave bootstrapPath unset`,
      exitCode: null,
      signal: null,
    });
  });

  test('no Node on the far side is a clear failure naming it', async () => {
    const result = await run('return 1', { launch: sshLaunch({ node: '/nonexistent/node' }) });
    assert.equal(failureOf(result), {
      kind: 'worker-exit',
      message: `ssh ${server.destination} (port ${server.port}): there is no Node at "/nonexistent/node" on the remote PATH (install Node >= 20.12 there, or set launch.node / --remote-node)`,
      exitCode: null,
      signal: null,
    });
  });

  test('a remote Node older than 20.12 is a clear failure naming its version', async () => {
    const result = await run('return 1', { launch: sshLaunch({ node: join(fixtures, 'old-node.sh') }) });
    assert.is(failureOf(result).kind, 'worker-exit');
    assert.is(failureOf(result).message, `ssh ${server.destination} (port ${server.port}): the remote Node v18.19.0 at ${JSON.stringify(join(fixtures, 'old-node.sh'))} is too old: the bootstrap needs Node >= 20.12`);
  });

  test('an unreachable host, a wrong key and a wrong host key each fail with what ssh said', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ptc-remote-ssh-'));
    try {
      // A port nothing listens on: the one sshd.sh picked, once its server is... not ours to stop;
      // port 1 is privileged and unused on a test machine.
      const refused = failureOf(await run('return 1', { launch: sshLaunch({ port: 1 }) }));
      assert.is(refused.kind, 'worker-exit');
      assert.match(String(refused.message), /^ssh root@127\.0\.0\.1 \(port 1\): could not connect \(ssh exit code 255\): .*Connection refused/);

      const config = readFileSync(server.config, 'utf8');
      const stranger = join(dir, 'stranger');
      await new Promise((resolve) => spawn('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', stranger], { stdio: 'ignore' }).once('close', resolve));
      writeFileSync(join(dir, 'wrong-key'), config.replace(/IdentityFile .*/, `IdentityFile ${stranger}`));
      const denied = failureOf(await run('return 1', { launch: sshLaunch({ sshArgs: ['-F', join(dir, 'wrong-key')] }) }));
      assert.is(denied.kind, 'worker-exit');
      assert.match(String(denied.message), /could not connect \(ssh exit code 255\): .*Permission denied \(publickey\)/);

      writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${server.port} ${readFileSync(`${stranger}.pub`, 'utf8').split(' ').slice(0, 2).join(' ')}\n`);
      writeFileSync(join(dir, 'wrong-host-key'), config.replace(/UserKnownHostsFile .*/, `UserKnownHostsFile ${join(dir, 'known_hosts')}`));
      const spoofed = failureOf(await run('return 1', { launch: sshLaunch({ sshArgs: ['-F', join(dir, 'wrong-host-key')] }) }));
      assert.is(spoofed.kind, 'worker-exit');
      assert.match(String(spoofed.message), /could not connect \(ssh exit code 255\): [\s\S]*Host key verification failed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('raw stdout bytes that look like relay frames arrive as the program wrote them', async () => {
    // An exit frame, a control frame and a header claiming 4 GiB, as raw bytes on stdout.
    const forged = Buffer.concat([Buffer.from('X\x00\x00\x00\x0c{"code":0}C\x00\x00\x00\x03{}\nE', 'latin1'), Buffer.from([0xff, 0xff, 0xff, 0xff])]);
    const result = await run(`process.stdout.write(Buffer.from('${forged.toString('base64')}', 'base64')); return 'after'`);
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.equal(result.output, [{ type: 'text', text: forged.toString('utf8'), stream: 'stdout' }]);
    assert.is((result as Extract<RunResult, { status: 'ok' }>).value, 'after');
  });

  test('the ssh client killed mid-run fails the run as worker-exit, and the far side is cleaned up', async () => {
    const runtime = createRuntime({ launch: sshLaunch(), policy: { mode: 'full-access' }, prestartCarrier: false });
    try {
      let pids: { carrier: number; sleeper: number } | undefined;
      const result = await runtime.run(runtime.resolve({ program: `${SPAWN_SLEEP} await new Promise(() => {});`, timeoutMs: 60_000 }), {
        onOutput: (entry) => {
          if (entry.type !== 'text') return;
          pids = JSON.parse(entry.text);
          for (const pid of relayClients()) process.kill(pid, 'SIGKILL');
        },
      });
      const reported = failureOf(result);
      assert.is(reported.kind, 'worker-exit');
      assert.is(reported.signal, 'SIGKILL', JSON.stringify(reported));
      assert.is(reported.message, `${describeServer()}: the connection to the far side was lost (ssh was killed by SIGKILL)`);
      assert.ok(pids !== undefined);
      assert.ok(await waitUntil(() => !alive(pids!.carrier) && !alive(pids!.sleeper), SETTLE_MS), `left on the far side: ${JSON.stringify(pids)}`);
    } finally {
      await runtime.dispose();
    }
  });

  test('a relay that fails to start leaves the shared connection alone: the run in flight on it, a pooled carrier and the next runs all complete', async () => {
    // Both runtimes use one target, so one master connection. The second one's relay refuses to
    // start (its workspace does not exist over there), which makes the next carrier check the far
    // side again: over that same master, not a new one whose connect killed it (and, as the killed
    // master cleared what the new one prepared, the next connect killed that one mid-handshake:
    // "could not connect (ssh signal SIGKILL)").
    const missing = join(mkdtempSync(join(tmpdir(), 'ptc-remote-gone-')), 'missing');
    const pooled = createRuntime({ launch: sshLaunch(), policy: { mode: 'full-access' }, pool: { min: 1, max: 1 } });
    const elsewhere = createRuntime({ launch: sshLaunch(), policy: { mode: 'workspace-write', workspaceRoot: missing }, prestartCarrier: false });
    let release!: () => void;
    let called!: () => void;
    const calledOnce = new Promise<void>((resolve) => (called = resolve));
    const held = new Promise<void>((resolve) => (release = resolve));
    try {
      const holding = pooled.run(pooled.resolve({ program: 'await hold(); return "held"', bindings: { hold: () => (called(), held) }, timeoutMs: 30_000 }));
      await calledOnce;
      // The run took the pool's carrier; its replacement boots over the same master.
      await pooled.warmUp();
      const sockets = new Set(relayClients().map(controlSocket));
      assert.is(sockets.size, 1, `the relays use sockets ${JSON.stringify([...sockets])}`);
      const [socket] = sockets;
      const [master, ...others] = sshMasters().filter((pid) => controlSocket(pid) === socket);
      assert.ok(master !== undefined && others.length === 0, `expected one ssh master on ${socket}, got ${JSON.stringify(sshMasters().map((pid) => [pid, controlSocket(pid)]))}`);
      const refused = failureOf(await elsewhere.run(elsewhere.resolve({ program: 'return 1', timeoutMs: 30_000 })));
      assert.is(refused.kind, 'worker-exit', JSON.stringify(refused));
      assert.is(refused.message, `${describeServer()}: the working directory ${missing} does not exist on ${hostname()}: ENOENT: no such file or directory, lstat '${missing}'`);
      const [warm, fresh] = await Promise.all([
        pooled.run(pooled.resolve({ program: 'return "warm"', timeoutMs: 30_000 })),
        elsewhere.run(elsewhere.resolve({ program: 'return 1', policy: { mode: 'full-access' }, timeoutMs: 30_000 })),
      ]);
      assert.equal([warm.status, (warm as { value?: unknown }).value, warm.warm], ['ok', 'warm', true], JSON.stringify(warm));
      assert.equal([fresh.status, (fresh as { value?: unknown }).value], ['ok', 1], JSON.stringify(fresh));
      release();
      const first = await holding;
      assert.equal([first.status, (first as { value?: unknown }).value], ['ok', 'held'], JSON.stringify(first));
      assert.ok(alive(master), `the master connection ${master} was ended`);
    } finally {
      release();
      await Promise.all([pooled.dispose(), elsewhere.dispose()]);
      rmSync(dirname(missing), { recursive: true, force: true });
    }
  });

  test('an SSH connection dropped under a retained environment: the next run says why, and reconnects', async () => {
    const runtime = createRuntime({ launch: sshLaunch(), policy: { mode: 'full-access' }, prestartCarrier: false, executionMode: 'persistent-in-memory' });
    try {
      const owner = {};
      const go = (program: string) => runtime.run(runtime.resolve({ program, stateOwner: owner, timeoutMs: 30_000 }));
      const first = await go('var kept = 1; process.pid');
      assert.is(first.status, 'ok', JSON.stringify(first));
      const carrier = (first as { value: number }).value;
      // The server's end of the connection goes, as when the network drops: every sshd session
      // process of this test's server (the master's and the carrier's channel).
      const sessions = sshdSessions();
      assert.ok(sessions.length > 0, 'no sshd session process of the test server');
      for (const pid of sessions) process.kill(pid, 'SIGKILL');
      assert.ok(await waitUntil(() => !alive(carrier), SETTLE_MS), `the carrier ${carrier} outlived its connection`);
      // And the host has seen its ssh client end (a run sent before that would meet the dying one).
      // The channel's pipes are the master's to close (ssh -S passes them to it): both must be gone.
      assert.ok(await waitUntil(() => relayClients().length === 0 && ownChildrenWith('ptc-ssh-').length === 0, SETTLE_MS), 'the ssh processes of the lost connection are still running');
      const next = await go('typeof kept');
      assert.is(next.status, 'ok', JSON.stringify(next));
      assert.is((next as { value: unknown }).value, 'undefined');
      assert.equal(next.environment, { fresh: true, replaced: `the previous environment was lost: ${describeServer()}: the connection to the far side was lost (ssh exited with code 255) while idle` });
      const after = await go('typeof kept');
      assert.equal(after.environment, { fresh: false });
    } finally {
      await runtime.dispose();
    }
  });

  test('the host killed mid-run leaves no process on the far side', async () => {
    const host = spawn(process.execPath, [join(fixtures, 'host.ts'), JSON.stringify(sshLaunch())], { stdio: ['ignore', 'pipe', 'inherit'] });
    const text = await new Promise<string>((resolve) => host.stdout.setEncoding('utf8').once('data', resolve));
    const pids = JSON.parse(text) as { carrier: number; sleeper: number };
    assert.ok(alive(pids.carrier) && alive(pids.sleeper));
    host.kill('SIGKILL');
    assert.ok(await waitUntil(() => !alive(pids.carrier) && !alive(pids.sleeper), SETTLE_MS), `left on the far side: ${JSON.stringify(pids)}`);
    assert.ok(await waitUntil(() => processesWith(pids.carrier.toString()).length === 0 && processesWith('ptc-ssh-').length === 0, SETTLE_MS), 'ssh processes of the killed host remain');
  });

  test('a command-prefix launch runs the relay through any stdio-only command', async () => {
    const result = await run('inspect("through env"); return process.version', {
      launch: { kind: 'command', command: ['env', '-i', 'PATH=/usr/bin:/bin'], node: '/usr/bin/node', bootstrapPath: join(repoRoot, 'dist/bootstrap.mjs') },
    });
    assert.equal(withoutWarm(result), { status: 'ok', value: await nodeVersion(), output: [{ type: 'text', text: 'through env\n', stream: 'stdout' }], sandbox: { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, location: 'remote', denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() } });
  });
}

// The relay removes the far side's private temp directory; root removes anything, so the far
// side must be another user to see a leak: as root, the command prefix runs it as nobody (setpriv).
const AS_USER = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
for (const backend of ['bwrap', 'node-permission'] as const) {
  test(`command prefix, ${backend}: the relay removes directories the program made unwritable in its temp directory`, async () => {
    const root = mkdtempSync(join(realpathSync(tmpdir()), 'ptc-relay-user-'));
    try {
      const [ws, tmp] = [join(root, 'ws'), join(root, 'tmp')];
      for (const directory of [ws, tmp]) mkdirSync(directory);
      for (const directory of [root, ws, tmp]) chmodSync(directory, 0o777);
      // A copy the far side's user can read wherever the checkout is.
      const bootstrapPath = join(root, 'bootstrap.mjs');
      copyFileSync(join(repoRoot, 'dist/bootstrap.mjs'), bootstrapPath);
      chmodSync(bootstrapPath, 0o644);
      const program = [
        'const fs = await import("node:fs"); const os = await import("node:os");',
        'fs.mkdirSync(`${os.tmpdir()}/locked/inner`, { recursive: true }); fs.writeFileSync(`${os.tmpdir()}/locked/inner/file`, "x");',
        'fs.chmodSync(`${os.tmpdir()}/locked/inner`, 0); fs.chmodSync(`${os.tmpdir()}/locked`, 0o500);',
        'return os.tmpdir()',
      ].join('\n');
      const command = [...AS_USER, 'env', '-i', 'PATH=/usr/bin:/bin', `TMPDIR=${tmp}`, `HOME=${root}`];
      const runtime = createRuntime({ launch: { kind: 'command', command, node: '/usr/bin/node', bootstrapPath }, sandbox: { backend }, prestartCarrier: false });
      const result = await runtime.run(runtime.resolve({ program, cwd: ws, timeoutMs: 30_000 })).finally(() => runtime.dispose());
      assert.is(result.status, 'ok', JSON.stringify(result));
      assert.match(String((result as { value?: unknown }).value), new RegExp(`^${tmp}/ptc-\\d+-\\d+-[^/]+/tmp-`));
      assert.equal(readdirSync(tmp), []);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
}

const SPAWN_SLEEP = `
const { spawn } = await import('node:child_process');
const sleeper = spawn('sleep', ['1000'], { stdio: 'ignore' });
await new Promise((resolve) => sleeper.once('spawn', resolve));
inspect(JSON.stringify({ carrier: process.pid, sleeper: sleeper.pid }));
`;

function nodeVersion(): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('/usr/bin/node', ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => void (out += text));
    child.once('close', () => resolve(out.trim()));
  });
}

test.run();
