// The command launch into real Podman containers (test/helpers/podman.sh): `podman exec -i
// <container>` as root and, through setpriv, into the rootless container of an unprivileged user.
// A host killed with -9 leaves nothing over there: its podman exec sees stdin end, so does the
// relay, which kills the carrier's tree and removes its temp directory. The rootless container gets
// the same far side as the root one (bubblewrap, the CPU budget, the memory watchdog, the host's
// allowlist through the relay), and a container with podman's default capabilities has no
// bubblewrap for ptc, which the probe says in bubblewrap's own words. The allowlist, CPU and memory
// suites run again through the root container (launch: podman in test/run.ts).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRuntime, type RuntimeConfig, type RunResult } from '../../host/index.ts';
import { podmanContainers, podmanLaunch, repoRoot, waitUntil, reportLimits } from '../helpers/runtime.ts';
import { failureOf } from '../helpers/assert.ts';

const containers = podmanContainers();
if (containers === undefined) {
  // test/run.ts says so too; .ci/run always starts the containers.
  process.stdout.write('# no PTC_TEST_PODMAN_ROOTLESS_COMMAND: skipped (eval "$(bash test/helpers/podman.sh start)" to run it)\n');
}
/** The root container and the rootless one; only the latter when this suite is not root. */
const WHICH: Array<'root' | 'rootless'> = containers === undefined ? [] : process.env.PTC_TEST_PODMAN_COMMAND ? ['root', 'rootless'] : ['rootless'];

/** Runs `script` with the container's Node through `command` and returns what it printed. */
function inContainer(command: string[], script: string): string {
  const result = spawnSync(command[0]!, [...command.slice(1), '/usr/bin/node', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  if (result.status !== 0) throw new Error(`${command.join(' ')} node -e failed (${result.error?.message ?? `exit code ${result.status}`}): ${result.stderr}`);
  return result.stdout;
}

/** The container's processes other than its init, its `sleep infinity` and the listing itself: pid and argv. */
function containerProcesses(command: string[]): Array<{ pid: number; argv: string }> {
  return JSON.parse(inContainer(command, `const fs = require('node:fs'); const found = [];
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\\d+$/.test(entry) || Number(entry) === 1 || Number(entry) === process.pid) continue;
      try {
        const stat = fs.readFileSync('/proc/' + entry + '/stat', 'utf8');
        if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
        const argv = fs.readFileSync('/proc/' + entry + '/cmdline', 'utf8').split('\\0').join(' ').trim();
        if (argv !== '/usr/bin/sleep infinity') found.push({ pid: Number(entry), argv });
      } catch {}
    }
    process.stdout.write(JSON.stringify(found));`)) as Array<{ pid: number; argv: string }>;
}

/** What the container's /tmp holds. */
function containerTmp(command: string[]): string[] {
  return JSON.parse(inContainer(command, `process.stdout.write(JSON.stringify(require('node:fs').readdirSync('/tmp')))`)) as string[];
}

/** Host processes running `podman exec` into the container named last in `command`. */
function hostPodmanExecs(command: string[]): number[] {
  const container = command[command.length - 1]!;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.includes('exec') && argv.includes(container) && argv.some((word) => word.endsWith('podman'))) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

for (const which of WHICH) {
  test(`${which}: a host killed with -9 during a bwrap run leaves no process and no temp file in the container, and no podman exec`, async () => {
    const launch = podmanLaunch(which) as Extract<RuntimeConfig['launch'], { kind: 'command' }>;
    const command = launch.command;
    assert.equal(containerProcesses(command), [], 'the container was busy before the test');
    // What /tmp holds before the run: nothing of a run (the helper makes the repository's path in the
    // container's root file system, which puts its first part under /tmp when the checkout is there).
    const before = containerTmp(command);
    assert.equal(before.filter((name) => name.startsWith('ptc-')), [], 'a run\'s temp directory was in the container\'s /tmp before the test');
    // A host of its own, with a TMPDIR of its own, running a program that started a child and waits;
    // its cwd is /, which the rootless user's podman (run through setpriv) can enter.
    const hostTmp = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-podman-host-')));
    const host = `
      import { createRuntime } from ${JSON.stringify(`${repoRoot}host/index.ts`)};
      const runtime = createRuntime({ launch: ${JSON.stringify(launch)}, sandbox: { backend: 'bwrap' }, timeoutMs: 600000, maxTimeoutMs: 600000 });
      const program = "const { spawn } = await import('node:child_process'); spawn('sleep', ['6001'], { stdio: 'ignore' }); await (await import('node:fs/promises')).writeFile((await import('node:os')).tmpdir() + '/mine', 'x'); inspect('started'); await new Promise(() => setInterval(() => {}, 1000));";
      const result = await runtime.run(runtime.resolve({ program, cwd: '/workspace' }));
      process.stdout.write(JSON.stringify(result));
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', host], { cwd: '/', env: { ...process.env, TMPDIR: hostTmp }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const closed = new Promise((resolve) => child.once('close', resolve));
    try {
      let running: Array<{ pid: number; argv: string }> = [];
      const started = await waitUntil(() => {
        running = containerProcesses(command);
        return running.some((entry) => entry.argv === 'sleep 6001') && child.exitCode === null;
      }, 60_000);
      assert.ok(started, `the program's child never ran in the container: ${JSON.stringify(running)}; the host said ${stderr}`);
      // The relay, its carrier under bubblewrap, and the program's child.
      assert.ok(running.some((entry) => entry.argv.includes('--relay')), JSON.stringify(running));
      assert.ok(running.some((entry) => entry.argv.startsWith('/usr/bin/bwrap')), JSON.stringify(running));
      const relayDirectories = containerTmp(command).filter((name) => name.startsWith('ptc-'));
      assert.is(relayDirectories.length, 1, JSON.stringify(containerTmp(command)));
      assert.ok(hostPodmanExecs(command).length > 0, 'the host runs no podman exec');
      child.kill('SIGKILL');
      await closed;
      let left: Array<{ pid: number; argv: string }> = [];
      const emptied = await waitUntil(() => (left = containerProcesses(command)).length === 0, 30_000);
      assert.ok(emptied, `left in the container after the host died: ${JSON.stringify(left)}`);
      assert.equal(containerTmp(command), before, 'the relay\'s temp directory is gone');
      let execs: number[] = [];
      assert.ok(await waitUntil(() => (execs = hostPodmanExecs(command)).length === 0, 30_000), `podman exec processes left on the host: ${execs.join(' ')}`);
      assert.equal(readdirSync(hostTmp), [], 'the host left nothing in its TMPDIR');
    } finally {
      child.kill('SIGKILL');
      rmSync(hostTmp, { recursive: true, force: true });
    }
  });
}

if (WHICH.includes('rootless')) {
  test('rootless: the far side is the same: bubblewrap, the host\'s allowlist through the relay, the CPU budget and the memory watchdog', async () => {
    const allowed = createServer((req, res) => res.end(`allowed ${req.url}`));
    const denied = createServer((_req, res) => res.end('the denied server answered'));
    const listen = (server: typeof allowed) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    const [A, B] = await Promise.all([listen(allowed), listen(denied)]);
    const runtime = createRuntime({ launch: podmanLaunch('rootless'), policy: { mode: 'workspace-write', network: { allow: [`127.0.0.1:${A}`] } }, timeoutMs: 60_000 });
    try {
      const fetched = await runtime.run(runtime.resolve({
        cwd: '/workspace',
        program: `const out = []; for (const url of ['http://127.0.0.1:${A}/far', 'http://127.0.0.1:${B}/']) { try { out.push(await (await fetch(url)).text()) } catch (error) { out.push(error.message) } } return out;`,
      }));
      assert.is(fetched.status, 'ok', JSON.stringify(fetched));
      assert.equal((fetched as { value?: unknown }).value, ['allowed /far', `blocked by ptc network policy: 127.0.0.1:${B} is not allowed (default: loopback addresses are denied unless named)`]);
      assert.equal(fetched.sandbox, {
        // The rootless user's relay cannot make cgroups in its container: its watchdog counts the tasks.
        mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', location: 'remote', denied: true, memory: 'none', disk: 'watchdog', tasks: 'watchdog', cpu: 'none',
        network: { mode: 'allowlist', allowed: [{ host: '127.0.0.1', port: A, count: 1 }], denied: [{ host: '127.0.0.1', port: B, count: 1 }] },
      });
      const burnt = failureOf(await runtime.run(runtime.resolve({ cwd: '/workspace', cpuTimeMs: 300, program: 'for (;;) {}' })));
      assert.is(burnt.kind, 'timeout');
      assert.match(burnt.message, /^the program used [\d,]+ ms of CPU time, over its cpuTimeMs budget of 300 ms$/);
    } finally {
      await runtime.dispose();
      allowed.close();
      denied.close();
    }
    // No cgroup2 is mounted in the container, so the relay watches memory.
    const limited = createRuntime({ launch: podmanLaunch('rootless'), maxMemoryMb: 200, timeoutMs: 60_000 });
    try {
      const grown = await limited.run(limited.resolve({ cwd: '/workspace', program: 'const kept = []; for (let i = 0; i < 40; i++) { kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); await new Promise((resolve) => setTimeout(resolve, 10)); }' }));
      const over = failureOf(grown);
      assert.is(over.kind, 'worker-exit');
      assert.match(over.message, /^the carrier's process tree used \d+ MiB of resident memory, over its maxMemoryMb limit of 200 MiB, and was killed$/);
      assert.is(grown.sandbox.memory, 'watchdog');
    } finally {
      await limited.dispose();
    }
  });
}

if (process.env.PTC_TEST_PODMAN_PLAIN_COMMAND) {
  test('a container with podman\'s default capabilities has no bubblewrap for ptc: the probe says why, auto falls back to node-permission', async () => {
    const launch = { kind: 'command' as const, command: JSON.parse(process.env.PTC_TEST_PODMAN_PLAIN_COMMAND!) as string[], node: '/usr/bin/node', bootstrapPath: containers!.bootstrapPath };
    const describe = `command ${launch.command.join(' ')}`;
    // As the container's root, without CAP_SYS_ADMIN, bubblewrap cannot make its namespaces.
    const required = createRuntime({ launch, sandbox: { backend: 'bwrap' }, prestartCarrier: false });
    try {
      const result = await required.run(required.resolve({ program: 'return 1', cwd: '/workspace' }));
      const failed = failureOf(result);
      assert.is(failed.kind, 'sandbox-unavailable');
      assert.match(failed.message, `on the far side (${describe}): `);
      assert.match(failed.message, 'bubblewrap at /usr/bin/bwrap cannot create a sandbox here: bwrap: Creating new namespace failed: Operation not permitted');
    } finally {
      await required.dispose();
    }
    // Node 20's permission model cannot refuse the network, so the policy opens it for the fallback.
    const auto = createRuntime({ launch, policy: { mode: 'workspace-write', network: true }, prestartCarrier: false });
    try {
      const result = await auto.run(auto.resolve({ program: "try { (await import('node:fs')).writeFileSync('/opt/outside', 'x'); return 'written' } catch (error) { return error.code }", cwd: '/workspace' }));
      assert.is(result.status, 'ok', JSON.stringify(result));
      assert.is(result.sandbox.backend, 'node-permission');
      assert.is((result as { value?: unknown }).value, 'ERR_ACCESS_DENIED');
    } finally {
      await auto.dispose();
    }
    // As another user, bubblewrap makes a user namespace but cannot mount a /proc of its own over
    // the container's, which has paths masked (--security-opt unmask=/proc/* lifts that).
    const asNobody = { ...launch, command: [...launch.command.slice(0, -1), '-u', '65534', launch.command[launch.command.length - 1]!] };
    const other = createRuntime({ launch: asNobody, sandbox: { backend: 'bwrap' }, prestartCarrier: false });
    try {
      const failed = failureOf(await other.run(other.resolve({ program: 'return 1', cwd: '/workspace' })));
      assert.is(failed.kind, 'sandbox-unavailable');
      assert.match(failed.message, "bwrap: Can't mount proc on /newroot/proc: Operation not permitted");
    } finally {
      await other.dispose();
    }
  });
}

test.run();
