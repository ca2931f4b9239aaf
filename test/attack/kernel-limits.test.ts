// Issue 32, "limits the kernel keeps": an outside attacker burnt 10x a run's cpuTimeMs with status
// ok (children whose CPU time leaves the tree's count: double-forked, reaped by a parent that
// ignores SIGCHLD, exited between two samples), held 2 GiB under maxMemoryMb 128 in kernel memory
// no RSS shows (pipe buffers; unix socket buffers), and held thousands of tasks. Where the host can
// make cgroups (here: cgroup v1 as root) the kernel keeps each limit and the result says `cgroup`;
// where it cannot (here: the unprivileged victim) the result says `watchdog`, and the attacks the
// watchdog misses by design (docs/kernel-limits.md) are asserted only for what the report says.
// Each attack runs through dist/ptc under the real bubblewrap, as root and as the victim; the
// attacks are bounded themselves (at most 512 MiB, 4,000 tasks) so a guard that fails cannot take
// the machine down with it.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cgroupKeeps, findCgroups, sweepStaleCgroups, type CgroupBase } from '../../supervision/resources/cgroup.ts';
import { MAX_TASKS } from '../../supervision/resources/guard.ts';
import { carrierSideCgroupFiles, waitUntil } from '../helpers/runtime.ts';
import { binaryFor, ownedDirectory, removeReachableBinary, runAs, victims, processesNaming, type TestUser } from '../helpers/users.ts';

/** Appears in every attack's argv (and its forks'), so what outlives a run can be found. */
const MARKER = `ptc-kernel-limits-${process.pid}`;
const CPU_MS = 1_000;
const LIMIT_MB = 128;

test.after(() => removeReachableBinary());

/** What this suite's own user finds, as the host does: root gets the kernel's limits wherever they can be made. */
const found: CgroupBase = findCgroups(carrierSideCgroupFiles());
const rootKeeps = cgroupKeeps(found);

/** What keeps each limit when `user` runs ptc: the kernel where that user can make cgroups, else the watchdog. */
function expected(user: TestUser): { memory: string; tasks: string; cpu: string } {
  const keeps = user.uid === process.getuid?.() ? rootKeeps : victimKeeps(user);
  const mechanism = (kept: boolean): string => (kept ? 'cgroup' : 'watchdog');
  return { memory: mechanism(keeps.memory), tasks: mechanism(keeps.tasks), cpu: mechanism(keeps.cpu) };
}

/** The victim can make a cgroup only where it may write the directories root would use (never on this machine and CI). */
function victimKeeps(user: TestUser): { memory: boolean; tasks: boolean; cpu: boolean } {
  if ('unavailable' in found) return rootKeeps;
  const directories = found.version === 2 ? [found.directory] : Object.values(found.directories);
  const writable = directories.some((directory) => execFileSync('setpriv', [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups', '--', 'sh', '-c', `test -w ${directory} && echo yes || echo no`], { encoding: 'utf8' }).trim() === 'yes');
  return writable ? rootKeeps : { memory: false, tasks: false, cpu: false };
}

/** Runs `script` in python3, a child of the program (a program reaching raw system calls), through dist/ptc under bwrap as `user`. */
async function run(user: TestUser, script: string, flags: string[]): Promise<Record<string, any>> {
  const directory = ownedDirectory(user, 'ptc-kernel-limits-');
  try {
    const file = join(directory.path, 'program.ts');
    writeFileSync(file, `const { execFileSync } = await import('node:child_process');
return execFileSync('/usr/bin/python3', ['-c', ${JSON.stringify(script)}, ${JSON.stringify(MARKER)}], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();`, { mode: 0o644 });
    const finished = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'bwrap', '--require-enforcement', 'full', '--timeout-ms', '60000', ...flags, file], { cwd: directory.path, timeoutMs: 120_000 });
    assert.ok(finished.stdout.trim() !== '', `no result: ${finished.stderr}`);
    return JSON.parse(finished.stdout) as Record<string, any>;
  } finally {
    directory.remove();
  }
}

/** Processes of any attack still alive. */
const leftBehind = (): number[] => processesNaming(MARKER);

/** Carrier cgroups whose host is gone: a run must remove its own (cgroup.ts names them ptc-<pid>-<start>-<pidns>-<n>). */
function staleCgroups(): string[] {
  if ('unavailable' in found) return [];
  const directories = found.version === 2 ? [found.directory] : Object.values(found.directories);
  return directories.flatMap((directory) => readdirSync(directory).filter((name) => {
    const match = /^ptc-(\d+)-\d+-\d+-\d+$/.exec(name);
    if (match === null) return false;
    try {
      process.kill(Number(match[1]), 0);
      return false;
    } catch {
      return true;
    }
  }).map((name) => join(directory, name)));
}

/** Burns `seconds` of this process's CPU time. */
const BURN = `import os, signal, sys, time
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end: pass
`;

function cpuStopped(result: Record<string, any>): void {
  assert.is(result.status, 'failed', JSON.stringify(result));
  assert.is(result.failure.kind, 'timeout');
  assert.is(result.failure.cpuTimeMs, CPU_MS);
  assert.ok(result.failure.cpuUsedMs > CPU_MS, JSON.stringify(result.failure));
  assert.match(result.failure.message, /^the program used [\d,]+ ms of CPU time, over its cpuTimeMs budget of 1,000 ms$/);
}

function memoryKilled(result: Record<string, any>): void {
  assert.is(result.status, 'failed', JSON.stringify(result));
  assert.is(result.failure.kind, 'worker-exit');
  assert.is(result.failure.maxMemoryMb, LIMIT_MB);
  assert.is(result.failure.message, "the carrier's process tree reached its maxMemoryMb limit of 128 MiB and the kernel killed it (cgroup memory limit)");
}

function tasksKilled(result: Record<string, any>): void {
  assert.is(result.status, 'failed', JSON.stringify(result));
  assert.is(result.failure.kind, 'worker-exit');
  assert.is(result.failure.maxTasks, MAX_TASKS);
  assert.match(result.failure.message, /^the carrier's process tree (reached its limit of 1,024 tasks \(threads and processes\), the kernel refused to start more \(cgroup pids\.max\), and it|held [\d,]+ tasks \(threads and processes\), over its limit of 1,024, and) was killed$/);
}

/** Time for the kernel to finish deaths the host has already caused (thousands of tasks of a killed pid namespace); not a speed assertion. */
const SETTLE_MS = 10_000;

/** The host is fine after the attack: nothing of it is left, it can still start processes, no cgroup is left behind. */
async function hostFine(): Promise<void> {
  await waitUntil(() => leftBehind().length === 0, SETTLE_MS);
  assert.equal(leftBehind(), []);
  assert.is(execFileSync('sh', ['-c', 'echo fine'], { encoding: 'utf8' }), 'fine\n');
  assert.equal(staleCgroups(), []);
}

const CPU_FLAGS = ['--cpu-time-ms', String(CPU_MS)];
const MEMORY_FLAGS = ['--max-memory-mb', String(LIMIT_MB)];

for (const user of victims()) {
  const as = `as ${user.name}`;
  const keeps = expected(user);

  test(`${as}: the report says what keeps each limit (${JSON.stringify(keeps)})`, async () => {
    const result = await run(user, 'print("ran")', [...CPU_FLAGS, ...MEMORY_FLAGS]);
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.is(result.value, 'ran');
    assert.is(result.sandbox.memory, keeps.memory);
    assert.is(result.sandbox.tasks, keeps.tasks);
    assert.is(result.sandbox.cpu, keeps.cpu);
    // Without a budget or a memory limit, nothing keeps those; the task limit always holds.
    const plain = await run(user, 'print("ran")', []);
    assert.equal([plain.sandbox.memory, plain.sandbox.tasks, plain.sandbox.cpu], ['none', keeps.tasks, 'none']);
    await hostFine();
  });

  test(`${as}: CPU burnt by a double-forked grandchild, reparented away from the program, ends the run`, async () => {
    // The middle process exits at once; the grandchild burns 3x the budget and says when it is done.
    const result = await run(user, `${BURN}
done = os.path.join(os.environ.get("TMPDIR", "/tmp"), "burnt")
middle = os.fork()
if middle == 0:
    if os.fork() == 0:
        burn(3)
        open(done, "w").close()
        os._exit(0)
    os._exit(0)
os.waitpid(middle, 0)
while not os.path.exists(done): time.sleep(0.05)
print("burnt 3 s")`, CPU_FLAGS);
    assert.is(result.sandbox.cpu, keeps.cpu);
    cpuStopped(result);
    await hostFine();
  });

  test(`${as}: CPU burnt by children that exit between two samples, reaped by a parent ignoring SIGCHLD, ends the run`, async () => {
    // Each child burns 30 ms and is gone before the next sample; with SIGCHLD ignored the kernel
    // reaps it and its time reaches no parent's count: only the cgroup's total keeps it.
    const result = await run(user, `${BURN}
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
for _ in range(100):
    child = os.fork()
    if child == 0:
        burn(0.03)
        os._exit(0)
    while True:
        try: os.kill(child, 0)
        except ProcessLookupError: break
        time.sleep(0.001)
print("burnt 3 s in 100 children")`, CPU_FLAGS);
    assert.is(result.sandbox.cpu, keeps.cpu);
    // The watchdog misses this by design (docs/kernel-limits.md): only the kernel's count is asserted.
    if (keeps.cpu === 'cgroup') cpuStopped(result);
    await hostFine();
  });

  test(`${as}: CPU burnt by many short-lived children at once ends the run`, async () => {
    const result = await run(user, `${BURN}
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
for _ in range(75):
    children = []
    for _ in range(4):
        child = os.fork()
        if child == 0:
            burn(0.01)
            os._exit(0)
        children.append(child)
    for child in children:
        while True:
            try: os.kill(child, 0)
            except ProcessLookupError: break
            time.sleep(0.001)
print("burnt 3 s in 300 children")`, CPU_FLAGS);
    assert.is(result.sandbox.cpu, keeps.cpu);
    if (keeps.cpu === 'cgroup') cpuStopped(result);
    await hostFine();
  });

  // Kernel memory: the buffers belong to no process's RSS, and the tree's tmpfs and memfd files
  // are not where they are. The kernel charges them to the memory cgroup (v1 too, on this kernel).
  const RAISE_FDS = 'import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\nresource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))\n';

  test(`${as}: memory held in pipe buffers (F_SETPIPE_SZ, filled) ends the run at maxMemoryMb`, async () => {
    const result = await run(user, `import fcntl, os, time
${RAISE_FDS}
held, pipes = 0, []
while held < (512 << 20):
    try: r, w = os.pipe()
    except OSError: break
    try: fcntl.fcntl(w, 1031, 1 << 20)
    except OSError: pass
    os.set_blocking(w, False)
    try:
        while True: held += os.write(w, bytes(65536))
    except BlockingIOError: pass
    pipes.append((r, w))
print("held", held >> 20, "MiB in", len(pipes), "pipes", flush=True)
time.sleep(1)`, MEMORY_FLAGS);
    assert.is(result.sandbox.memory, keeps.memory);
    if (keeps.memory === 'cgroup') memoryKilled(result);
    await hostFine();
  });

  test(`${as}: memory held in unix socket buffers ends the run at maxMemoryMb`, async () => {
    const result = await run(user, `import os, socket, time
${RAISE_FDS}
held, pairs = 0, []
while held < (512 << 20):
    try: a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError: break
    a.setblocking(False)
    try:
        while True: held += a.send(bytes(65536))
    except BlockingIOError: pass
    pairs.append((a, b))
print("held", held >> 20, "MiB in", len(pairs), "socket pairs", flush=True)
time.sleep(1)`, MEMORY_FLAGS);
    assert.is(result.sandbox.memory, keeps.memory);
    if (keeps.memory === 'cgroup') memoryKilled(result);
    await hostFine();
  });

  test(`${as}: a fork bomb is bounded by the task limit, the run fails, nothing is left`, async () => {
    // Forks until refused (or 4,000 processes, the attack's own bound); each child sleeps.
    const result = await run(user, `import os, time
made = 0
try:
    for _ in range(4000):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        made += 1
except OSError as error:
    print("refused after", made, error, flush=True)
time.sleep(60)`, []);
    assert.is(result.sandbox.tasks, keeps.tasks);
    tasksKilled(result);
    await hostFine();
  });

  test(`${as}: thousands of threads are bounded by the task limit, the run fails, nothing is left`, async () => {
    const result = await run(user, `import threading, time
made = 0
try:
    for _ in range(4000):
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        made += 1
except RuntimeError as error:
    print("refused after", made, error, flush=True)
time.sleep(60)`, []);
    assert.is(result.sandbox.tasks, keeps.tasks);
    tasksKilled(result);
    await hostFine();
  });
}

// A host killed with -9 leaves its cgroups, and in them what its program left running; the next
// host that makes cgroups kills that and removes them, and leaves a live host's alone.
test(`a dead host's cgroup is swept with what is left in it; a live host's stays (${'unavailable' in found ? 'skipped: no cgroup can be made here' : 'cgroup v' + found.version})`, async () => {
  if ('unavailable' in found) return;
  const directory = found.version === 2 ? found.directory : Object.values(found.directories)[0]!;
  const namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))![1]!;
  const dead = spawnSync('true').pid!;
  const stale = join(directory, `ptc-${dead}-1-${namespace}-1`);
  const startOf = (pid: number): string => { const stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!; };
  const live = join(directory, `ptc-${process.pid}-${startOf(process.pid)}-${namespace}-999`);
  mkdirSync(stale);
  mkdirSync(live);
  const leftover = spawn('sleep', ['600', MARKER], { stdio: 'ignore' });
  try {
    writeFileSync(join(stale, 'cgroup.procs'), String(leftover.pid));
    assert.ok(sweepStaleCgroups(directory).includes(stale));
    await waitUntil(() => !existsSync(stale), SETTLE_MS);
    assert.not.ok(existsSync(stale), `${stale} is still there`);
    await waitUntil(() => leftBehind().length === 0, SETTLE_MS);
    assert.equal(leftBehind(), [], 'what the dead host left in its cgroup still runs');
    assert.ok(existsSync(live), "a live host's cgroup was swept");
  } finally {
    leftover.kill('SIGKILL');
    execFileSync('rmdir', [live]);
  }
});

test.run();
