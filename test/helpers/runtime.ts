// Shared test helpers: a runtime per test with short limits, and process inspection.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import { cgroupKeeps, findCgroups, type CgroupFiles } from '../../supervision/resources/cgroup.ts';
import type { Test } from 'uvu';
import { createRuntime, type Runtime, type RuntimeConfig, type RunResult } from '../../host/index.ts';

export const repoRoot = new URL('../..', import.meta.url).pathname;

/**
 * The carrier launch under test. test/run.ts runs the integration suites once from source and
 * again with PTC_TEST_LAUNCH=embedded (dist/ptc), PTC_TEST_LAUNCH=node-script (the machine's
 * /usr/bin/node running dist/bootstrap.mjs) and PTC_TEST_LAUNCH=ssh (the same Node on the far
 * side of the loopback sshd that test/helpers/sshd.sh starts, with the bootstrap delivered).
 * Suites that opt in run again with PTC_TEST_LAUNCH=podman: a command launch through `podman exec
 * -i` into the root container that test/helpers/podman.sh starts (its own file system, the host's
 * /usr, no network), whose bootstrap is installed there.
 */
export function launchUnderTest(): RuntimeConfig['launch'] {
  switch (process.env.PTC_TEST_LAUNCH) {
    case undefined:
    case '':
    case 'source':
      return undefined;
    case 'embedded':
      return { kind: 'embedded', executable: `${repoRoot}dist/ptc` };
    case 'node-script':
      return { kind: 'node-script', executable: '/usr/bin/node', bootstrapPath: `${repoRoot}dist/bootstrap.mjs` };
    case 'ssh':
      return sshLaunch();
    case 'podman':
      return podmanLaunch();
    default:
      throw new Error(`PTC_TEST_LAUNCH must be source, embedded, node-script, ssh or podman, got ${process.env.PTC_TEST_LAUNCH}`);
  }
}

/**
 * createRuntime with the launch under test unless the config names one. Suites about execution run
 * unconfined (full-access) unless they name a policy; the sandbox suites name theirs.
 */
export function createTestRuntime(config: RuntimeConfig = {}): ReturnType<typeof createRuntime> {
  const launch = launchUnderTest();
  return createRuntime({ policy: { mode: 'full-access' }, ...(launch && !config.launch ? { launch } : {}), ...config });
}

/**
 * A suite's maker of runtimes: each is createTestRuntime with `defaults` under the config a test
 * gives, and is disposed after the test that made it (through `test`'s after-each hook).
 */
export function runtimesPerTest(test: Test, defaults: RuntimeConfig = {}): (config?: RuntimeConfig) => Runtime {
  const made: Runtime[] = [];
  test.after.each(async () => {
    await Promise.all(made.splice(0).map((runtime) => runtime.dispose()));
  });
  return (config = {}) => {
    const runtime = createTestRuntime({ ...defaults, ...config });
    made.push(runtime);
    return runtime;
  };
}

/** A result as whole-result comparisons see it: without `warm`, which says only how far the warm pool had come when the run began (pool.test.ts asserts it). */
export type ResultShape = RunResult extends infer R ? (R extends unknown ? Omit<R, 'warm'> : never) : never;

/** The result without `warm`, after checking that it is a boolean. */
export function withoutWarm(result: unknown): ResultShape {
  const { warm, ...shape } = result as RunResult;
  if (typeof warm !== 'boolean') throw new TypeError(`result.warm must be a boolean, got ${JSON.stringify(result)}`);
  return shape as ResultShape;
}

/** Runs one program with a fresh runtime and returns the result. */
export async function runProgram(
  program: string,
  request: Record<string, unknown> = {},
  config: RuntimeConfig = {},
  options: Parameters<ReturnType<typeof createRuntime>['run']>[1] = {},
): Promise<RunResult> {
  const runtime = createTestRuntime({ timeoutMs: 20_000, ...config });
  try {
    return await runtime.run(runtime.resolve({ program, ...request }), options);
  } finally {
    await runtime.dispose();
  }
}

/** PIDs of live (non-zombie) processes whose process group is `pgid`. */
export function processesInGroup(pgid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid) found.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** Child processes of this process, with their state letter (Z = zombie). */
export function childrenOf(pid: number): Array<{ pid: number; state: string; command: string }> {
  const found: Array<{ pid: number; state: string; command: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid) found.push({ pid: Number(entry), state: fields[0]!, command });
    } catch {
      // gone
    }
  }
  return found;
}

/** Number of open file descriptors of this process. */
export function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

/**
 * Whether process `pid` still runs here: a zombie awaiting its reaper has exited, and so has a
 * process whose /proc entry vanishes between the lookup and the read (one read, no exists-then-read race).
 */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

/** PIDs of processes in group `pgid` that have not exited; zombies awaiting their reaper are dead. */
export function liveProcessesInGroup(pgid: number): number[] {
  return processesInGroup(pgid).filter(processAlive);
}

/** Polls `check` every 10 ms until it is true or `deadlineMs` elapses; returns its last answer. */
export async function waitUntil(check: () => boolean, deadlineMs: number): Promise<boolean> {
  const end = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() >= end) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

/** Every process that has not exited, with its process group; one pass over /proc. */
export function liveProcesses(): Array<{ pid: number; pgid: number; command: string }> {
  const found: Array<{ pid: number; pgid: number; command: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      found.push({ pid: Number(entry), pgid: Number(fields[2]), command: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** The loopback sshd from test/helpers/sshd.sh, as exported into the environment; undefined without one. */
export function sshServer(): { destination: string; port: number; config: string; dir: string } | undefined {
  const { PTC_TEST_SSH_DESTINATION: destination, PTC_TEST_SSH_PORT: port, PTC_TEST_SSH_CONFIG: config, PTC_TEST_SSH_DIR: dir } = process.env;
  if (!destination || !port || !config || !dir) return undefined;
  return { destination, port: Number(port), config, dir };
}

/** The ssh launch against that server, running the machine's /usr/bin/node. */
export function sshLaunch(overrides: Record<string, unknown> = {}): NonNullable<RuntimeConfig['launch']> {
  const server = sshServer();
  if (server === undefined) throw new Error('PTC_TEST_LAUNCH=ssh needs the sshd of test/helpers/sshd.sh: eval "$(bash test/helpers/sshd.sh start)"');
  return { kind: 'ssh', destination: server.destination, port: server.port, sshArgs: ['-F', server.config], node: '/usr/bin/node', ...overrides } as NonNullable<RuntimeConfig['launch']>;
}

/** The containers of test/helpers/podman.sh, as exported into the environment; undefined without them. */
export function podmanContainers(): { command: string[]; rootlessCommand: string[]; bootstrapPath: string } | undefined {
  const { PTC_TEST_PODMAN_COMMAND: command, PTC_TEST_PODMAN_ROOTLESS_COMMAND: rootless, PTC_TEST_PODMAN_BOOTSTRAP: bootstrapPath } = process.env;
  if (!rootless || !bootstrapPath) return undefined;
  // Started by an ordinary user, there is only that user's rootless container.
  return { command: JSON.parse(command || rootless) as string[], rootlessCommand: JSON.parse(rootless) as string[], bootstrapPath };
}

/** The command launch into the root container (`podman exec -i <container>`), or the rootless one. */
export function podmanLaunch(which: 'root' | 'rootless' = 'root'): NonNullable<RuntimeConfig['launch']> {
  const containers = podmanContainers();
  if (containers === undefined) throw new Error('PTC_TEST_LAUNCH=podman needs the containers of test/helpers/podman.sh: eval "$(bash test/helpers/podman.sh start)"');
  return { kind: 'command', command: which === 'root' ? containers.command : containers.rootlessCommand, node: '/usr/bin/node', bootstrapPath: containers.bootstrapPath };
}

/**
 * Runs `script` with the Node on the side where the launch under test runs its carriers (this
 * machine, or the container through the launch's own command prefix) and returns its stdout.
 */
export function onCarrierSide(script: string): string {
  const launch = launchUnderTest();
  const argv = launch?.kind === 'command' ? [...launch.command, launch.node ?? 'node', '-e', script] : [process.execPath, '-e', script];
  const result = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 30_000 });
  if (result.status !== 0) throw new Error(`${argv.join(' ')} failed (${result.error?.message ?? `exit code ${result.status}`}): ${result.stderr}`);
  return result.stdout;
}

/** liveProcesses() where the launch under test runs its carriers: there, pids are the ones a program sees. */
export function carrierSideProcesses(): Array<{ pid: number; pgid: number; command: string }> {
  if (launchUnderTest()?.kind !== 'command') return liveProcesses();
  // The same reading of /proc as liveProcesses(), in plain JavaScript for the Node over there.
  const script = `const fs = require('node:fs'); const found = [];
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\\d+$/.test(entry)) continue;
      try {
        const stat = fs.readFileSync('/proc/' + entry + '/stat', 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (fields[0] !== 'Z') found.push({ pid: Number(entry), pgid: Number(fields[2]), command: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
      } catch {}
    }
    process.stdout.write(JSON.stringify(found));`;
  return JSON.parse(onCarrierSide(script)) as Array<{ pid: number; pgid: number; command: string }>;
}

/** The files cgroup detection reads (supervision/resources/cgroup.ts), on this machine. */
const localCgroupFiles: CgroupFiles = {
  read: (path) => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
  },
  writable: (path) => {
    try {
      accessSync(path, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  },
};

/** The same files as the relay or host that makes a carrier's cgroup sees them, for the launch under test. */
export function carrierSideCgroupFiles(): CgroupFiles {
  if (launchUnderTest()?.kind !== 'command') return localCgroupFiles;
  return {
    read: (path) => JSON.parse(onCarrierSide(`try { process.stdout.write(JSON.stringify(require('node:fs').readFileSync(${JSON.stringify(path)}, 'utf8'))) } catch { process.stdout.write('null') }`)) ?? undefined,
    writable: (path) => onCarrierSide(`const fs = require('node:fs'); try { fs.accessSync(${JSON.stringify(path)}, fs.constants.W_OK); process.stdout.write('yes') } catch { process.stdout.write('no') }`) === 'yes',
  };
}

/** What a sandbox report says keeps the task limit and the CPU budget (`budget`: the run has a
 * cpuTimeMs) for the launch under test, or (`here`) for a carrier this machine starts whatever the
 * launch under test: the kernel where that side can make cgroups (supervision/resources/cgroup.ts),
 * else the watchdog; CPU is 'none' without a budget. */
export function reportLimits(budget = false, side: 'launch' | 'here' = 'launch'): { tasks: 'cgroup' | 'watchdog'; cpu: 'cgroup' | 'watchdog' | 'none' } {
  const keeps = side === 'here' ? (keptHere ??= cgroupKeeps(findCgroups(localCgroupFiles))) : (kept ??= cgroupKeeps(findCgroups(carrierSideCgroupFiles())));
  return { tasks: keeps.tasks ? 'cgroup' : 'watchdog', cpu: !budget ? 'none' : keeps.cpu ? 'cgroup' : 'watchdog' };
}
let kept: ReturnType<typeof cgroupKeeps> | undefined;
let keptHere: ReturnType<typeof cgroupKeeps> | undefined;

/** What a sandbox report adds for the launch under test: a remote launch says where it was enforced. */
export function reportLocation(): { location?: 'remote' } {
  const launch = launchUnderTest();
  return launch?.kind === 'ssh' || launch?.kind === 'command' ? { location: 'remote' } : {};
}

/** How a sandbox-unavailable message starts for the launch under test: a remote one names the far side. */
export function unavailablePrefix(): string {
  const launch = launchUnderTest();
  if (launch?.kind === 'command') return `on the far side (command ${launch.command.join(' ')}): `;
  if (launch?.kind !== 'ssh') return '';
  return `on the far side (ssh ${launch.destination}${launch.port !== undefined ? ` (port ${launch.port})` : ''}): `;
}
