// Issue 16, item 6: memory and disk a program holds outside its resident set. Under bwrap /dev,
// /dev/shm and /run were RAM-backed, unsized and writable, the private temp directory an unsized
// host directory, and memfd files hold pages no VmRSS shows: a program capped at maxMemoryMb 128
// held 200 MiB of host memory (or disk) for its whole run and returned ok. Each attack runs through dist/ptc under the real bubblewrap, as root and as the victim, and
// must now be refused (EROFS, ENOSPC, no user namespace) or killed naming maxMemoryMb; nothing it
// made outlives the run. The fills are done by child processes (sh, dd, python3), as a program
// reaching raw syscalls would.
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sshLaunch, sshServer } from '../helpers/runtime.ts';
import { binaryFor, currentUser, ownedDirectory, removeReachableBinary, runAs, victims, processesNaming, type TestUser } from '../helpers/users.ts';

const LIMIT_MB = 128;
const FILL_MB = 200;
/** Appears in every attack's argv, so what outlives a run can be found. */
const MARKER = `ptc-bounds-${process.pid}`;

test.after(() => removeReachableBinary());

/** Runs `program` through dist/ptc under `backend` as `user`, with `flags`, in a workspace under `base`; `after` sees the workspace before it is removed. */
async function run(user: TestUser, program: string, flags: string[] = ['--max-memory-mb', String(LIMIT_MB)], backend: 'bwrap' | 'node-permission' = 'bwrap', base = '/tmp', after?: (workspace: string) => void): Promise<Record<string, any>> {
  const directory = ownedDirectory(user, 'ptc-bounds-', base);
  try {
    const file = join(directory.path, 'program.ts');
    writeFileSync(file, program, { mode: 0o644 });
    const finished = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', backend, '--require-enforcement', backend === 'bwrap' ? 'full' : 'partial', ...flags, file], { cwd: directory.path });
    assert.ok(finished.stdout.trim() !== '', `no result: ${finished.stderr}`);
    after?.(directory.path);
    return JSON.parse(finished.stdout) as Record<string, any>;
  } finally {
    directory.remove();
  }
}

/** A program that runs `script` in sh (the fill, which prints what it held), then holds it a while. */
function shell(script: string): string {
  // The program's environment is its own: TMPDIR is handed to the child as the program sees it.
  return `const { execFileSync } = await import('node:child_process');
const { tmpdir } = await import('node:os');
return execFileSync('sh', ['-c', ${JSON.stringify(`${script}; sleep 1`)}, ${JSON.stringify(MARKER)}], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin', TMPDIR: tmpdir() } }).trim();`;
}

/** Fills `path` with FILL_MB MiB; prints "held" only when all of it was written. */
function fill(path: string): string {
  return shell(`dd if=/dev/zero of=${path} bs=1M count=${FILL_MB} 2>&1 | grep -q '^${FILL_MB}+0 records out' && echo held || { dd if=/dev/zero of=${path}.2 bs=1M count=1 2>&1 | head -1; }`);
}

/** A memfd, filled with write(2): no mapping, so no RSS, and it dies with the fd. */
const MEMFD = `const { execFileSync } = await import('node:child_process');
return execFileSync('/usr/bin/python3', ['-c', ${JSON.stringify(`import os, time
fd = os.memfd_create("fill")
block = bytes(1 << 20)
for _ in range(${FILL_MB}): os.write(fd, block)
print("held", flush=True)
time.sleep(2)`)}, ${JSON.stringify(MARKER)}], { encoding: 'utf8' }).trim();`;

/** A System V segment made, attached, touched and detached: held by the kernel, in no RSS. */
const SYSV = `const { execFileSync } = await import('node:child_process');
return execFileSync('/usr/bin/python3', ['-c', ${JSON.stringify(`import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
segment = libc.shmget(0, ${FILL_MB} << 20, 0o1600)
if segment < 0: print("refused", os.strerror(ctypes.get_errno()), flush=True)
else:
    address = libc.shmat(segment, None, 0)
    ctypes.memset(address, 1, ${FILL_MB} << 20)
    libc.shmdt(ctypes.c_void_p(address))
    print("held", flush=True)`)}, ${JSON.stringify(MARKER)}], { encoding: 'utf8' }).trim();`;

const MIB = 1024 * 1024;

// maxDiskMb. A workspace on storage (/var/tmp, on the root file system) is counted by the tree's
// storage writes, one on a RAM file system (/dev/shm, as /tmp is on many machines) by walking it.
const DISK_MB = 64;
const DISK_FLAGS = ['--max-disk-mb', String(DISK_MB)];
const STORAGE = '/var/tmp';
const RAM = ramBase();

/** A RAM file system every test user can make a workspace in: a tmpfs of the suite's own where it can mount one (root), else /tmp when that is one. */
function ramBase(): string | undefined {
  if (process.getuid?.() === 0) {
    const point = mkdtempSync(join(STORAGE, 'ptc-bounds-ram-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1g,mode=1777', 'ptc-bounds', point], { stdio: 'ignore' });
      test.after(() => {
        execFileSync('umount', [point]);
        rmdirSync(point);
      });
      return point;
    } catch {
      rmdirSync(point); // a container without CAP_SYS_ADMIN: as below
    }
  }
  return statfsSync('/tmp').type === 0x01021994 ? '/tmp' : undefined;
}
/** The disk attacks try to write this much; a kill must land long before they are done. */
const DISK_FILL_MB = 1024;

function diskKilled(result: Record<string, any>): void {
  assert.is(result.status, 'failed', JSON.stringify(result));
  assert.is(result.failure.kind, 'worker-exit');
  assert.is(result.failure.maxDiskMb, DISK_MB);
  assert.match(result.failure.message, /^the carrier's process tree wrote [\d,]+ MiB to disk.*, over its maxDiskMb limit of 64 MiB, and was killed$/);
  const used = Number(/wrote ([\d,]+) MiB/.exec(result.failure.message)![1]!.replace(/,/g, ''));
  assert.ok(used > DISK_MB && used < DISK_FILL_MB / 2, result.failure.message);
  assert.is(result.sandbox.disk, 'watchdog');
}

/** Bytes the files under `directory` hold (allocated blocks, each inode once). */
function heldUnder(directory: string): number {
  const seen = new Set<number>();
  let bytes = 0;
  for (const name of readdirSync(directory, { recursive: true }) as string[]) {
    const stat = lstatSync(join(directory, name));
    if (seen.has(stat.ino)) continue;
    seen.add(stat.ino);
    bytes += stat.blocks * 512;
  }
  return bytes;
}

/** The kill landed long before the fill was done: the overshoot is the writes of a sampling gap and a scheduling delay (README, Disk), not a timed bound. */
function boundedFill(workspace: string): void {
  assert.ok(heldUnder(workspace) < (DISK_FILL_MB / 2) * MIB, `${heldUnder(workspace) / MIB} MiB left in the workspace`);
}

/** Fills `path` with DISK_FILL_MB MiB. */
function diskFill(path: string): string {
  return shell(`dd if=/dev/zero of=${path} bs=1M count=${DISK_FILL_MB} 2>&1 | tail -1`);
}

/** Python in a child process (a program reaching raw system calls), printing what it managed. */
function python(script: string): string {
  return `const { execFileSync } = await import('node:child_process');
return execFileSync('/usr/bin/python3', ['-c', ${JSON.stringify(script)}, ${JSON.stringify(MARKER)}], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();`;
}

/** Killed at maxMemoryMb: by the kernel where the carrier has a memory cgroup (it charges tmpfs and memfd pages to it), else by the watchdog, which names what it counted. */
function memoryKilled(result: Record<string, any>, limitMb = LIMIT_MB): void {
  assert.is(result.status, 'failed', JSON.stringify(result));
  assert.is(result.failure.kind, 'worker-exit');
  assert.is(result.failure.maxMemoryMb, limitMb);
  if (result.sandbox.memory === 'cgroup') assert.is(result.failure.message, `the carrier's process tree reached its maxMemoryMb limit of ${limitMb} MiB and the kernel killed it (cgroup memory limit)`);
  else assert.match(result.failure.message, new RegExp(`in tmpfs and memfd files\\), over its maxMemoryMb limit of ${limitMb} MiB`));
}

/** Shared memory of the host (Shmem of /proc/meminfo), which tmpfs and memfd pages are. */
function hostShmem(): number {
  return Number(/^Shmem:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;
}

const leftBehind = (): number[] => processesNaming(MARKER);

for (const user of victims()) {
  const as = `as ${user.name}`;

  test(`${as}: /dev/shm is a 64 MiB tmpfs whose use counts against maxMemoryMb`, async () => {
    const before = hostShmem();
    // At the smallest limit: /dev/shm full is all of it, however the carrier's own pages are
    // counted (the kernel's memory cgroup counts each page once, the watchdog shared ones per process).
    memoryKilled(await run(user, fill('/dev/shm/f'), ['--max-memory-mb', '64']), 64);
    // Returned with the sandbox (other tests on the machine move Shmem a little).
    assert.ok(hostShmem() - before < 32 * MIB, `Shmem grew by ${(hostShmem() - before) / MIB} MiB`);
    assert.equal(leftBehind(), []);
  });

  test(`${as}: without maxMemoryMb, /dev/shm still holds at most 64 MiB`, async () => {
    const result = await run(user, shell(`dd if=/dev/zero of=/dev/shm/f bs=1M count=${FILL_MB} 2>&1; df -k /dev/shm | tail -1`), []);
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.match(result.value, /No space left on device/);
    assert.match(result.value, /\s65536\s+65536\s+0\s/);
  });

  test(`${as}: the private temp directory is a tmpfs whose use counts against maxMemoryMb`, async () => {
    memoryKilled(await run(user, fill('"$TMPDIR/f"')));
    assert.equal(leftBehind(), []);
  });

  test(`${as}: without maxMemoryMb, the private temp directory still holds at most 512 MiB`, async () => {
    const result = await run(user, shell('dd if=/dev/zero of="$TMPDIR/f" bs=1M count=600 2>&1; df -k "$TMPDIR" | tail -1'), []);
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.match(result.value, /No space left on device/);
    assert.match(result.value, /\s524288\s+524288\s+0\s/);
  });

  for (const path of ['/dev/f', '/run/f', '/tmp/f']) {
    test(`${as}: ${path} (a tmpfs) cannot be written`, async () => {
      const result = await run(user, fill(path));
      assert.is(result.status, 'ok', JSON.stringify(result));
      assert.match(result.value, /Read-only file system/);
    });
  }

  test(`${as}: a workspace at /tmp hides the sandbox's /tmp tmpfs, which counts nothing`, async () => {
    // The sleep gives the watchdog samples to take; a mount it could not measure once killed this run.
    const result = await run(user, "await new Promise((resolve) => setTimeout(resolve, 300)); return process.cwd();", ['--max-memory-mb', String(LIMIT_MB), '--cwd', '/tmp']);
    assert.equal(result.status === 'ok' ? result.value : result, '/tmp');
  });

  test(`${as}: System V shared memory, which no RSS shows, cannot be made`, async () => {
    const result = await run(user, SYSV);
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.is(result.value, 'refused Operation not permitted');
    assert.equal(leftBehind(), []);
  });

  test(`${as}: a memfd's pages count against maxMemoryMb`, async () => {
    memoryKilled(await run(user, MEMFD));
    assert.equal(leftBehind(), []);
  });

  test(`${as}: no user namespace can be made to mount a tmpfs of the program's own`, async () => {
    // unshare(1) maps the user into the new namespace, where mount(8) then mounts a tmpfs of half the RAM.
    const result = await run(user, shell(`unshare -rm sh -c 'mount -t tmpfs fill /mnt && dd if=/dev/zero of=/mnt/f bs=1M count=${FILL_MB} 2>&1 | tail -1' 2>&1`));
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.match(result.value, /unshare failed: Operation not permitted/);
  });

  test(`${as}: under node-permission /dev/shm cannot be written, nor a child process started to make a memfd`, async () => {
    const program = `const { writeFileSync } = await import('node:fs');
const { execFileSync } = await import('node:child_process');
const tried = [];
for (const attempt of [() => writeFileSync('/dev/shm/f', 'x'), () => execFileSync('/usr/bin/python3', ['-c', 'import os; os.memfd_create("f")'])]) {
  try { attempt(); tried.push('done'); } catch (error) { tried.push(error.code); }
}
return tried;`;
    const result = await run(user, program, ['--max-memory-mb', String(LIMIT_MB)], 'node-permission');
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.equal(result.value, ['ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED']);
  });

  // Without root to mount a tmpfs, the RAM cases run where /tmp is one. The victim runs the cases
  // where its uid could matter (reading the tree's /proc/<pid>/io through a user namespace, the
  // walk of its files); how each kind of write is counted is the same for every user.
  const thorough = user.uid === process.getuid?.();
  const bases = [['on storage', STORAGE], ...(RAM === undefined ? [] : [['on a RAM file system', RAM]])] as Array<[string, string]>;
  for (const [where, base] of bases) {
    test(`${as}: a workspace ${where} filled by a child process is killed at maxDiskMb`, async () => {
      diskKilled(await run(user, diskFill('f'), DISK_FLAGS, 'bwrap', base, boundedFill));
      assert.equal(leftBehind(), []);
    });
    if (!thorough) continue;

    test(`${as}: many small files ${where} count a page each and are killed at maxDiskMb`, async () => {
      diskKilled(await run(user, python(`import os
for i in range(262144):
    with open(f"f{i}", "w") as f: f.write("x")
print("made them all")`), DISK_FLAGS, 'bwrap', base, boundedFill));
    });

    test(`${as}: sparse files and hard links ${where} hold nothing new and are not counted`, async () => {
      // 40 MiB written once, linked 200 times, and a 100 GiB file with no blocks: under 64 MiB in all.
      const result = await run(user, shell('dd if=/dev/zero of=f bs=1M count=40 2>/dev/null; for i in $(seq 200); do ln f l$i; done; truncate -s 100G sparse; echo done'), DISK_FLAGS, 'bwrap', base);
      assert.is(result.status, 'ok', JSON.stringify(result));
      assert.is(result.value, 'done');
    });
  }

  test(`${as}: a workspace on storage filled by an orphaned grandchild is killed at maxDiskMb`, async () => {
    // The subshell's dd outlives its parent: the sandbox's pid namespace still holds it, and its reaper counts it.
    diskKilled(await run(user, shell(`(dd if=/dev/zero of=f bs=1M count=${DISK_FILL_MB} 2>/dev/null &); sleep 5`), DISK_FLAGS, 'bwrap', STORAGE, boundedFill));
    assert.equal(leftBehind(), []);
  });

  if (thorough) {
    test(`${as}: fallocate is refused, and posix_fallocate's writes count`, async () => {
      const refused = await run(user, shell(`fallocate -l ${DISK_FILL_MB}M f 2>&1; touch g; fallocate -n -l ${DISK_FILL_MB}M g 2>&1; du -k f g`), DISK_FLAGS, 'bwrap', STORAGE, boundedFill);
      assert.is(refused.status, 'ok', JSON.stringify(refused));
      assert.is(refused.value, 'fallocate: fallocate failed: Operation not supported\nfallocate: fallocate failed: keep size mode is unsupported\n0\tf\n0\tg');
      diskKilled(await run(user, python(`import os
fd = os.open("f", os.O_CREAT | os.O_RDWR)
os.posix_fallocate(fd, 0, ${DISK_FILL_MB} << 20)
print("allocated")`), DISK_FLAGS, 'bwrap', STORAGE, boundedFill));
    });
  }

  // One synchronous write in the carrier itself, then the completion at once.
  for (const [backend, [where, base]] of [...(thorough ? [['bwrap', bases[0]!]] : []), ['node-permission', bases[bases.length - 1]!]] as Array<['bwrap' | 'node-permission', [string, string]]>) {
    test(`${as}: under ${backend}, a fill ${where} that returns before the next sample still fails`, async () => {
      diskKilled(await run(user, `const { writeFileSync } = await import('node:fs');
writeFileSync('f', Buffer.alloc(${DISK_MB + 16} << 20));
return 'wrote it';`, DISK_FLAGS, backend, base, boundedFill));
    });
  }

  test(`${as}: under node-permission the private temp directory counts against maxDiskMb`, async () => {
    diskKilled(await run(user, `const { writeFileSync } = await import('node:fs');
const { tmpdir } = await import('node:os');
const block = Buffer.alloc(1 << 20);
for (let i = 0; i < ${DISK_FILL_MB}; i++) {
  writeFileSync(\`\${tmpdir()}/f\${i}\`, block);
  await new Promise((resolve) => setTimeout(resolve, 1));
}
return 'held';`, DISK_FLAGS, 'node-permission', STORAGE));
  });

}

// The relay's far side builds the same bwrap argv, so the same sizes bound what a program holds
// there (maxMemoryMb, when set, is the relay's watchdog or cgroup over there: relay/limits.ts).
const server = sshServer();
test(`over ssh (as ${server === undefined ? 'root: skipped, no sshd of test/helpers/sshd.sh' : server.destination}): the far side's /dev/shm and private temp directory are sized, /dev and /run read-only, no user namespace`, async () => {
  if (server === undefined) return;
  const user = currentUser();
  const directory = ownedDirectory(user, 'ptc-bounds-');
  try {
    const config = join(directory.path, 'config.json');
    writeFileSync(config, JSON.stringify({ launch: sshLaunch(), sandbox: { backend: 'bwrap', require: 'full' } }));
    const file = join(directory.path, 'program.ts');
    writeFileSync(file, shell(`dd if=/dev/zero of=/dev/shm/f bs=1M count=${FILL_MB} 2>&1 | grep -c 'No space'; df -k /dev/shm "$TMPDIR" | tail -2; touch /run/f /dev/f 2>&1; unshare -rm true 2>&1; true`));
    const finished = await runAs(user, [binaryFor(user), 'run', '--json', '--config', config, file], { cwd: directory.path });
    const result = JSON.parse(finished.stdout) as Record<string, any>;
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.is(result.sandbox.location, 'remote');
    const lines = (result.value as string).split('\n');
    assert.is(lines[0], '1', result.value);
    assert.match(lines[1]!, /^tmpfs\s+65536\s+65536\s+0\s.*\/dev\/shm$/);
    assert.match(lines[2]!, /^tmpfs\s+524288\s+0\s+524288\s.*\/ptc-0-[^/]*\/tmp-[^/]*$/);
    assert.match(lines[3]!, /\/run\/f': Read-only file system/);
    assert.match(lines[4]!, /\/dev\/f': Read-only file system/);
    assert.match(lines[5]!, /unshare failed: Operation not permitted/);
  } finally {
    directory.remove();
  }
});

// maxDiskMb is watched where the tree is: the relay on the far side kills it and tells the host why.
for (const backend of ['bwrap', 'node-permission'] as const) {
  test(`over ssh (${server === undefined ? 'skipped, no sshd of test/helpers/sshd.sh' : server.destination}), under ${backend}: the relay kills a tree that fills its workspace at maxDiskMb`, async () => {
    if (server === undefined) return;
    const user = currentUser();
    const directory = ownedDirectory(user, 'ptc-bounds-', STORAGE);
    try {
      const config = join(directory.path, 'config.json');
      writeFileSync(config, JSON.stringify({ launch: sshLaunch(), maxDiskMb: DISK_MB, sandbox: { backend, require: 'partial' } }));
      const file = join(directory.path, 'program.ts');
      // node-permission refuses child processes: the carrier writes itself, a block at a time.
      writeFileSync(file, backend === 'bwrap' ? diskFill('f') : `const { appendFileSync } = await import('node:fs');
for (let i = 0; i < ${DISK_FILL_MB}; i++) { appendFileSync('f', Buffer.alloc(1 << 20)); await new Promise((resolve) => setTimeout(resolve, 1)); }
return 'held';`);
      const finished = await runAs(user, [binaryFor(user), 'run', '--json', '--config', config, file], { cwd: directory.path });
      const result = JSON.parse(finished.stdout) as Record<string, any>;
      assert.is(result.sandbox.location, 'remote');
      assert.is(result.sandbox.backend, backend);
      diskKilled(result);
      boundedFill(directory.path);
    } finally {
      directory.remove();
    }
  });
}

test.run();
