// Issue 16, item 6: memory and disk a program holds outside its resident set. Under bwrap /dev,
// /dev/shm and /run were RAM-backed, unsized and writable, the private temp directory an unsized
// host directory, and memfd files hold pages no VmRSS shows: a program capped at maxMemoryMb 128
// held 200 MiB of host memory (or disk) for its whole run and returned ok. Each attack runs through dist/ptc under the real bubblewrap, as root and as the victim, and
// must now be refused (EROFS, ENOSPC, no user namespace) or killed naming maxMemoryMb; nothing it
// made outlives the run. The fills are done by child processes (sh, dd, python3), as a program
// reaching raw syscalls would.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sshLaunch, sshServer } from '../helpers/runtime.ts';
import { binaryFor, currentUser, ownedDirectory, removeReachableBinary, runAs, victims, type TestUser } from '../helpers/users.ts';

const LIMIT_MB = 128;
const FILL_MB = 200;
/** Appears in every attack's argv, so what outlives a run can be found. */
const MARKER = `ptc-bounds-${process.pid}`;

test.after(() => removeReachableBinary());

/** Runs `program` through dist/ptc under `backend` as `user`, with `flags`. */
async function run(user: TestUser, program: string, flags: string[] = ['--max-memory-mb', String(LIMIT_MB)], backend: 'bwrap' | 'node-permission' = 'bwrap'): Promise<Record<string, any>> {
  const directory = ownedDirectory(user, 'ptc-bounds-');
  try {
    const file = join(directory.path, 'program.ts');
    writeFileSync(file, program, { mode: 0o644 });
    const finished = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', backend, '--require-enforcement', backend === 'bwrap' ? 'full' : 'partial', ...flags, file], { cwd: directory.path });
    assert.ok(finished.stdout.trim() !== '', `no result: ${finished.stderr}`);
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

function memoryKilled(result: Record<string, any>): void {
  assert.is(result.status, 'failed', JSON.stringify(result));
  assert.is(result.failure.kind, 'worker-exit');
  assert.is(result.failure.maxMemoryMb, LIMIT_MB);
  assert.match(result.failure.message, /in tmpfs and memfd files\), over its maxMemoryMb limit of 128 MiB/);
}

/** Shared memory of the host (Shmem of /proc/meminfo), which tmpfs and memfd pages are. */
function hostShmem(): number {
  return Number(/^Shmem:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;
}

function leftBehind(): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(MARKER);
    } catch {
      return false;
    }
  });
}

for (const user of victims()) {
  const as = `as ${user.name}`;

  test(`${as}: /dev/shm is a 64 MiB tmpfs whose use counts against maxMemoryMb`, async () => {
    const before = hostShmem();
    memoryKilled(await run(user, fill('/dev/shm/f')));
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
}

// The relay's far side builds the same bwrap argv, so the same sizes bound what a program holds
// there (maxMemoryMb, when set, is the relay's watchdog or cgroup over there: carrier/relay/limits.ts).
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

test.run();
