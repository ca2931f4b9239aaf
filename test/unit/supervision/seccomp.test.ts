// The seccomp allowlist bwrap installs: run through a small classic-BPF interpreter against a table
// of calls and arguments per architecture, so each verdict (allow, EPERM, ENOSYS, EAFNOSUPPORT, kill,
// ...) is checked without a kernel; test/attack/syscall-filter.test.ts and
// test/attack/kernel-interfaces.test.ts check the same filter under the real one.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import {
  ALLOWED_GROUPS, ARCHES, CLONE_NAMESPACE_FLAGS, EAFNOSUPPORT, ENOSYS, EOPNOTSUPP, EPERM, EPROTONOSUPPORT, FILTERED, newestKnown, REFUSED_SURFACE, REFUSED_WITH,
  RET_ALLOW, RET_KILL_PROCESS, SECCOMP_FD, seccompFilter, seccompProgram, seccompProgramForAll, seccompUnavailable, type Instruction,
} from '../../../supervision/seccomp.ts';

const ALLOW = RET_ALLOW;
const errno = (code: number): number => 0x00050000 | code;
const AUDIT_I386 = 0x40000003;

/** Runs `program` on one struct seccomp_data (nr, arch, args as 64-bit values) as the kernel would, returning the action. */
function verdict(program: Instruction[], nr: number, arch: number, args: ReadonlyArray<number | bigint> = []): number {
  return run(program, nr, arch, args).action;
}

/** The action, and how many instructions the kernel ran to reach it. */
function run(program: Instruction[], nr: number, arch: number, args: ReadonlyArray<number | bigint>): { action: number; steps: number } {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr | 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  args.forEach((value, index) => data.writeBigUInt64LE(typeof value === 'bigint' ? value : BigInt(value >>> 0), 16 + 8 * index));
  let accumulator = 0;
  let steps = 0;
  for (let pc = 0; pc < program.length; pc++) {
    if (++steps > program.length) throw new Error('the program loops');
    const { code, jt, jf, k } = program[pc]!;
    if (code === 0x20) accumulator = data.readUInt32LE(k);
    else if (code === 0x06) return { action: k >>> 0, steps };
    else if (code === 0x05) pc += k;
    else if (code === 0x15) pc += accumulator === k >>> 0 ? jt : jf;
    else if (code === 0x25) pc += accumulator > k >>> 0 ? jt : jf;
    else if (code === 0x35) pc += accumulator >= k >>> 0 ? jt : jf;
    else if (code === 0x45) pc += (accumulator & k) !== 0 ? jt : jf;
    else if (code === 0x54) accumulator = (accumulator & k) >>> 0;
    else throw new Error(`instruction ${pc}: unexpected code ${code}`);
  }
  throw new Error('the program ran off its end');
}

/** The kernel's checks on a filter (sk_chk_filter, seccomp_check_filter): no backward or
 * out-of-range jump, only loads inside struct seccomp_data, a return at the end, at most 4096. */
function assertValid(program: Instruction[]): void {
  assert.ok(program.length <= 4096, `${program.length} instructions`);
  program.forEach(({ code, jt, jf, k }, pc) => {
    if (code === 0x05) assert.ok(pc + 1 + k < program.length, `instruction ${pc}: BPF_JA past the end`);
    else if ((code & 0x07) === 0x05) {
      assert.ok(jt <= 255 && jf <= 255, `instruction ${pc}: offset does not fit 8 bits`);
      assert.ok(pc + 1 + Math.max(jt, jf) < program.length, `instruction ${pc}`);
    }
    if (code === 0x20) assert.ok(k % 4 === 0 && k < 64, `instruction ${pc}: load at ${k}`);
  });
  assert.is(program.at(-1)!.code, 0x06);
}

const SIGCHLD = 17;
/** What glibc's fork() and pthread_create() pass to clone. */
const FORK_FLAGS = 0x01200000 | SIGCHLD;
const THREAD_FLAGS = 0x003d0f00;
const O_WRONLY = 0o1, O_CREAT = 0o100, O_TRUNC = 0o1000, O_TMPFILE = 0o20000000 | 0o200000;
const AT_FDCWD = -100;

type Case = [name: string, call: string, args: ReadonlyArray<number | bigint>, expected: number];

/** Cases for a call by name; an architecture without that call skips them (legacy path calls on arm64). */
const CASES: Case[] = [
  // Ordinary calls pass.
  ['read', 'read', [], ALLOW],
  ['write', 'write', [], ALLOW],
  ['mmap', 'mmap', [], ALLOW],
  ['futex', 'futex', [], ALLOW],
  ['execve', 'execve', [], ALLOW],
  ['epoll_pwait', 'epoll_pwait', [], ALLOW],
  ['getrandom', 'getrandom', [], ALLOW],
  ['statx', 'statx', [], ALLOW],
  ['getxattr, reading', 'getxattr', [], ALLOW],
  // Refused surface: by absence, with EPERM.
  ['keyctl', 'keyctl', [], errno(EPERM)],
  ['add_key', 'add_key', [], errno(EPERM)],
  ['unshare(CLONE_NEWUSER)', 'unshare', [0x10000000], errno(EPERM)],
  ['unshare(0), which would do nothing', 'unshare', [0], errno(EPERM)],
  ['setns', 'setns', [], errno(EPERM)],
  ['mount', 'mount', [], errno(EPERM)],
  ['io_uring_setup', 'io_uring_setup', [], errno(EPERM)],
  ['bpf', 'bpf', [], errno(EPERM)],
  ['ptrace', 'ptrace', [], errno(EPERM)],
  ['shmget', 'shmget', [], errno(EPERM)],
  ['msgget', 'msgget', [], errno(EPERM)],
  ['mq_open', 'mq_open', [], errno(EPERM)],
  ['io_setup (Linux AIO)', 'io_setup', [], errno(EPERM)],
  ['process_vm_readv', 'process_vm_readv', [], errno(EPERM)],
  ['userfaultfd', 'userfaultfd', [], errno(EPERM)],
  ['perf_event_open', 'perf_event_open', [], errno(EPERM)],
  // clone: fork and threads pass, any namespace flag is refused; the high word changes nothing.
  ['clone for fork()', 'clone', [FORK_FLAGS], ALLOW],
  ['clone for a thread', 'clone', [THREAD_FLAGS], ALLOW],
  ['clone(CLONE_NEWUSER)', 'clone', [FORK_FLAGS | 0x10000000], errno(EPERM)],
  ['clone(CLONE_NEWNS)', 'clone', [0x00020000], errno(EPERM)],
  ['clone(CLONE_NEWTIME)', 'clone', [0x00000080 | SIGCHLD], errno(EPERM)],
  ['clone(CLONE_NEWNET) with high bits set', 'clone', [(0xffffffffn << 32n) | 0x40000000n], errno(EPERM)],
  ['clone3, for libc to fall back to clone', 'clone3', [], errno(ENOSYS)],
  // personality.
  ['personality query', 'personality', [0xffffffff], ALLOW],
  ['personality(PER_LINUX)', 'personality', [0], ALLOW],
  ['personality(ADDR_NO_RANDOMIZE)', 'personality', [0x0040000], errno(EPERM)],
  ['personality(READ_IMPLIES_EXEC)', 'personality', [0x0400000], errno(EPERM)],
  // socket families.
  ['socket(AF_UNIX)', 'socket', [1, 1, 0], ALLOW],
  ['socket(AF_INET)', 'socket', [2, 1, 0], ALLOW],
  ['socket(AF_INET6)', 'socket', [10, 2, 0], ALLOW],
  ['socket(AF_NETLINK, NETLINK_ROUTE), getifaddrs', 'socket', [16, 3, 0], ALLOW],
  ['socket(AF_NETLINK, NETLINK_SOCK_DIAG)', 'socket', [16, 3, 4], errno(EPROTONOSUPPORT)],
  ['socket(AF_NETLINK, NETLINK_AUDIT)', 'socket', [16, 3, 9], errno(EPROTONOSUPPORT)],
  ['socket(AF_VSOCK)', 'socket', [40, 1, 0], errno(EAFNOSUPPORT)],
  ['socket(AF_PACKET)', 'socket', [17, 3, 0], errno(EAFNOSUPPORT)],
  ['socket(AF_ALG)', 'socket', [38, 5, 0], errno(EAFNOSUPPORT)],
  ['socket(AF_KEY)', 'socket', [15, 3, 2], errno(EAFNOSUPPORT)],
  ['socket(AF_BLUETOOTH)', 'socket', [31, 3, 0], errno(EAFNOSUPPORT)],
  ['socket(AF_TIPC)', 'socket', [30, 2, 0], errno(EAFNOSUPPORT)],
  ['socket(AF_RDS)', 'socket', [21, 5, 0], errno(EAFNOSUPPORT)],
  ['socket(AF_VSOCK) with AF_UNIX in the high word', 'socket', [(1n << 32n) | 40n, 1, 0], errno(EAFNOSUPPORT)],
  ['socketpair(AF_UNIX)', 'socketpair', [1, 1, 0], ALLOW],
  ['socketpair(AF_VSOCK)', 'socketpair', [40, 1, 0], errno(EAFNOSUPPORT)],
  ['socketpair(AF_INET)', 'socketpair', [2, 1, 0], errno(EAFNOSUPPORT)],
  // ioctl: terminal injection refused, the rest passes.
  ['ioctl(TCGETS)', 'ioctl', [1, 0x5401], ALLOW],
  ['ioctl(TIOCGWINSZ)', 'ioctl', [1, 0x5413], ALLOW],
  ['ioctl(FIONBIO)', 'ioctl', [1, 0x5421], ALLOW],
  ['ioctl(TIOCSTI)', 'ioctl', [0, 0x5412], errno(EPERM)],
  ['ioctl(TIOCLINUX)', 'ioctl', [0, 0x541c], errno(EPERM)],
  ['ioctl(TIOCCONS)', 'ioctl', [0, 0x541d], errno(EPERM)],
  ['ioctl(TIOCSETD)', 'ioctl', [0, 0x5423], errno(EPERM)],
  // The kernel takes ioctl's command as unsigned int: high bits do not make TIOCSTI another command.
  ['ioctl(TIOCSTI) with high bits set', 'ioctl', [0, (1n << 32n) | 0x5412n], errno(EPERM)],
  // Mode bits: S_ISUID and S_ISGID never reach a file.
  ['chmod 0755', 'chmod', [0, 0o755], ALLOW],
  ['chmod 04755', 'chmod', [0, 0o4755], errno(EPERM)],
  ['chmod 02755', 'chmod', [0, 0o2755], errno(EPERM)],
  ['chmod 01777 (sticky)', 'chmod', [0, 0o1777], ALLOW],
  ['fchmod 0644', 'fchmod', [3, 0o644], ALLOW],
  ['fchmod 04711', 'fchmod', [3, 0o4711], errno(EPERM)],
  ['fchmodat 0600', 'fchmodat', [AT_FDCWD, 0, 0o600], ALLOW],
  ['fchmodat 06755', 'fchmodat', [AT_FDCWD, 0, 0o6755], errno(EPERM)],
  ['fchmodat2 02700', 'fchmodat2', [AT_FDCWD, 0, 0o2700, 0x100], errno(EPERM)],
  ['fchmodat2 0700', 'fchmodat2', [AT_FDCWD, 0, 0o700, 0x100], ALLOW],
  ['open to read, with garbage in mode', 'open', [0, 0, 0o4755], ALLOW],
  ['open O_CREAT 0644', 'open', [0, O_WRONLY | O_CREAT | O_TRUNC, 0o644], ALLOW],
  ['open O_CREAT 04755', 'open', [0, O_WRONLY | O_CREAT, 0o4755], errno(EPERM)],
  ['openat to read, with garbage in mode', 'openat', [AT_FDCWD, 0, 0, 0o6777], ALLOW],
  ['openat O_CREAT 0666', 'openat', [AT_FDCWD, 0, O_WRONLY | O_CREAT, 0o666], ALLOW],
  ['openat O_CREAT 04755', 'openat', [AT_FDCWD, 0, O_WRONLY | O_CREAT, 0o4755], errno(EPERM)],
  ['openat O_CREAT 02755', 'openat', [AT_FDCWD, 0, O_WRONLY | O_CREAT, 0o2755], errno(EPERM)],
  ['openat O_TMPFILE 04755', 'openat', [AT_FDCWD, 0, O_WRONLY | O_TMPFILE, 0o4755], errno(EPERM)],
  ['openat2, whose mode is in memory', 'openat2', [], errno(ENOSYS)],
  ['creat 0644', 'creat', [0, 0o644], ALLOW],
  ['creat 04755', 'creat', [0, 0o4755], errno(EPERM)],
  ['mkdir 0755', 'mkdir', [0, 0o755], ALLOW],
  ['mkdir 02775', 'mkdir', [0, 0o2775], errno(EPERM)],
  ['mkdirat 0700', 'mkdirat', [AT_FDCWD, 0, 0o700], ALLOW],
  ['mkdirat 02700', 'mkdirat', [AT_FDCWD, 0, 0o2700], errno(EPERM)],
  ['mknodat a FIFO (mkfifo)', 'mknodat', [AT_FDCWD, 0, 0o10644, 0], ALLOW],
  ['mknodat a regular file', 'mknodat', [AT_FDCWD, 0, 0o100644, 0], ALLOW],
  ['mknodat with type 0 (regular)', 'mknodat', [AT_FDCWD, 0, 0o644, 0], ALLOW],
  ['mknodat a character device', 'mknodat', [AT_FDCWD, 0, 0o20666, 0x103], errno(EPERM)],
  ['mknodat a block device', 'mknodat', [AT_FDCWD, 0, 0o60660, 0x800], errno(EPERM)],
  ['mknodat a setuid regular file', 'mknodat', [AT_FDCWD, 0, 0o104755, 0], errno(EPERM)],
  ['mknod a FIFO', 'mknod', [0, 0o10600, 0], ALLOW],
  ['mknod a character device', 'mknod', [0, 0o20600, 0x103], errno(EPERM)],
  // Extended attributes: setting refused (security.capability), reading and removing allowed.
  ['setxattr', 'setxattr', [], errno(EOPNOTSUPP)],
  ['lsetxattr', 'lsetxattr', [], errno(EOPNOTSUPP)],
  ['fsetxattr', 'fsetxattr', [], errno(EOPNOTSUPP)],
  ['setxattrat', 'setxattrat', [], errno(EOPNOTSUPP)],
  ['removexattr', 'removexattr', [], ALLOW],
  ['fallocate, for libc to write the blocks instead', 'fallocate', [], errno(EOPNOTSUPP)],
  // Newer calls with an older path callers take on ENOSYS.
  ['statmount, for libmount to read mountinfo', 'statmount', [], errno(ENOSYS)],
  ['listmount', 'listmount', [], errno(ENOSYS)],
  ['file_getattr, for the FS_IOC_FSGETXATTR ioctl', 'file_getattr', [], errno(ENOSYS)],
  ['file_setattr, newest in the table, on no list', 'file_setattr', [], errno(EPERM)],
  ['lsm_set_self_attr, on no list', 'lsm_set_self_attr', [], errno(EPERM)],
];

for (const [arch, table] of Object.entries(ARCHES)) {
  const program = seccompProgram(arch)!;
  const n = table.numbers;
  for (const [name, call, args, expected] of CASES) {
    if (n[call] === undefined) continue;
    test(`seccomp ${arch}: ${name}`, () => {
      assert.is(verdict(program, n[call]!, table.audit, args), expected >>> 0);
    });
  }

  test(`seccomp ${arch}: every call of every allowed group that exists there is allowed`, () => {
    for (const { calls } of ALLOWED_GROUPS) {
      for (const name of calls) if (n[name] !== undefined) assert.is(verdict(program, n[name]!, table.audit), ALLOW, name);
    }
  });

  test(`seccomp ${arch}: every call of the refused surface is absent from the allowlist and refused with EPERM`, () => {
    const allowed = new Set([...ALLOWED_GROUPS.flatMap(({ calls }) => calls), ...Object.keys(FILTERED), ...Object.keys(REFUSED_WITH)]);
    for (const name of REFUSED_SURFACE) {
      assert.not.ok(allowed.has(name), name);
      if (n[name] !== undefined) assert.is(verdict(program, n[name]!, table.audit), errno(EPERM), name);
    }
  });

  test(`seccomp ${arch}: a number nothing names is refused with EPERM, one newer than the table with ENOSYS`, () => {
    const named = new Set(Object.values(n));
    const unnamed = Array.from({ length: newestKnown(table) }, (_, nr) => nr).filter((nr) => !named.has(nr));
    assert.ok(unnamed.length > 0);
    for (const nr of unnamed) assert.is(verdict(program, nr, table.audit), errno(EPERM), String(nr));
    assert.is(verdict(program, newestKnown(table) + 1, table.audit), errno(ENOSYS));
    assert.is(verdict(program, 1000, table.audit), errno(ENOSYS));
  });

  test(`seccomp ${arch}: another ABI's call is never judged by this table`, () => {
    assert.is(verdict(program, 20, AUDIT_I386), RET_KILL_PROCESS >>> 0);
    const other = arch === 'x64' ? ARCHES.arm64! : ARCHES.x64!;
    assert.is(verdict(program, 0, other.audit), RET_KILL_PROCESS >>> 0);
    if (arch === 'x64') assert.is(verdict(program, 0x40000000 | 1, table.audit), errno(EPERM), 'an x32 call (bit 30)');
  });

  test(`seccomp ${arch}: the program passes the kernel's checks`, () => {
    assertValid(program);
  });

  test(`seccomp ${arch}: finding any call's number takes a binary search, not a walk of the list`, () => {
    let deepest = 0;
    for (let nr = 0; nr <= newestKnown(table); nr++) deepest = Math.max(deepest, run(program, nr, table.audit, []).steps);
    assert.ok(deepest <= 30, `deepest path ${deepest} instructions`);
  });
}

// The numbers are checked against the kernel headers where this machine has them (up to 450; the
// newer ones, shared by both tables, are checked to be the same on both).
const HEADERS: Array<[string, string, RegExp, Record<string, string>]> = [
  ['x64', '/usr/include/x86_64-linux-gnu/asm/unistd_64.h', /^#define __NR_(\w+)\s+(\d+)$/gm, {}],
  ['arm64', '/usr/include/asm-generic/unistd.h', /^#define __NR(?:3264)?_(\w+)\s+(\d+)$/gm, { newfstatat: 'fstatat' }],
];
for (const [arch, header, pattern, aliases] of HEADERS) {
  test(`seccomp ${arch}: syscall numbers match ${header}`, () => {
    if (!existsSync(header)) return console.log(`  (skipped: no ${header} here)`);
    const known = new Map([...readFileSync(header, 'utf8').matchAll(pattern)].map((match) => [match[1]!, Number(match[2])]));
    known.delete('syscalls'); // __NR_syscalls: the count, not a call
    const newest = Math.max(...known.values());
    for (const [name, nr] of Object.entries(ARCHES[arch]!.numbers)) {
      if (nr > newest && nr < 1000) continue;
      assert.is(nr, known.get(aliases[name] ?? name), name);
    }
  });
}
test('seccomp: from 424 on, both tables number every call alike', () => {
  for (const [name, nr] of Object.entries(ARCHES.x64!.numbers)) if (nr >= 424) assert.is(ARCHES.arm64!.numbers[name], nr, name);
});

// The installed filter holds every table: under qemu-user the arm64 binary's sandbox sees the
// x86_64 calls of the emulator (and of bwrap itself), which the arm64 table alone would kill.
const ALL = seccompProgramForAll();
for (const [arch, table] of Object.entries(ARCHES)) {
  const n = table.numbers;
  for (const [name, call, args, expected] of CASES) {
    if (n[call] === undefined) continue;
    test(`seccomp, every table: ${arch} ${name} is judged by the ${arch} table`, () => {
      assert.is(verdict(ALL, n[call]!, table.audit, args), expected >>> 0);
    });
  }
}
test('seccomp, every table: an i386 call is killed, an x32 call refused, and the kernel accepts the program', () => {
  assert.is(verdict(ALL, 20, AUDIT_I386), RET_KILL_PROCESS >>> 0);
  assert.is(verdict(ALL, 0x40000000 | 1, ARCHES.x64!.audit), errno(EPERM));
  assertValid(ALL);
});

test('seccompFilter encodes struct sock_filter[] little-endian: 8 bytes an instruction, every table', () => {
  const program = seccompProgramForAll();
  const bytes = seccompFilter('x64')!;
  assert.is(bytes.length, program.length * 8);
  assert.equal([bytes.readUInt16LE(0), bytes[2], bytes[3], bytes.readUInt32LE(4)], [0x20, 0, 0, 4]);
  assert.equal([bytes.readUInt16LE(bytes.length - 8), bytes.readUInt32LE(bytes.length - 4)], [0x06, program.at(-1)!.k >>> 0]);
});

test('seccompFilter is built once and handed out as a copy: a launch that changes its bytes does not change the next launch\'s', () => {
  const first = seccompFilter('x64')!;
  const expected = Buffer.from(first);
  first.fill(0);
  const second = seccompFilter('x64')!;
  assert.ok(second.equals(expected), 'the second filter differs from the first as it was handed out');
  assert.ok(!second.equals(first));
  // Every arch with a table gets the same program: it holds every table.
  assert.ok(seccompFilter('arm64')!.equals(expected));
});

test('every group names a reason, and no call is in two places', () => {
  const seen = new Map<string, string>();
  for (const { group, reason, calls } of ALLOWED_GROUPS) {
    assert.ok(reason.length > 20, group);
    for (const name of calls) {
      assert.not.ok(seen.has(name), `${name} is in ${group} and ${seen.get(name)}`);
      seen.set(name, group);
    }
  }
  for (const name of [...Object.keys(FILTERED), ...Object.keys(REFUSED_WITH)]) {
    assert.not.ok(seen.has(name), `${name} is allowed whole and also ${name in FILTERED ? 'filtered' : 'refused'}`);
    seen.set(name, 'filtered or refused');
  }
  for (const name of seen.keys()) assert.ok(ARCHES.x64!.numbers[name] !== undefined || ARCHES.arm64!.numbers[name] !== undefined, `${name} has no number`);
});

test('an architecture without a table has no filter, and the reason says bwrap cannot be used', () => {
  assert.is(seccompProgram('riscv64'), undefined);
  assert.is(seccompFilter('ia32'), undefined);
  assert.match(seccompUnavailable('riscv64')!, /no seccomp filter for the riscv64 architecture/);
  assert.is(seccompUnavailable('x64'), undefined);
  assert.is(seccompProgram('constructor'), undefined);
});

test('the namespace flags cover every CLONE_NEW*, and the filter goes on the fd after the control pipe', () => {
  assert.is(CLONE_NAMESPACE_FLAGS, 0x7e020080);
  assert.is(SECCOMP_FD, 4);
});

test.run();
