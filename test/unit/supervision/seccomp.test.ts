// The seccomp filter bwrap installs: run through a small classic-BPF interpreter against a table of
// calls per architecture, so each verdict (allow, EPERM, ENOSYS, kill) is checked without a kernel;
// test/attack/kernel-interfaces.test.ts checks the same filter under the real one.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { ARCHES, CLONE_NAMESPACE_FLAGS, DENIED, ENOSYS, EOPNOTSUPP, EPERM, RET_KILL_PROCESS, SECCOMP_FD, seccompFilter, seccompProgram, seccompProgramForAll, seccompUnavailable, type Instruction } from '../../../supervision/seccomp.ts';

const ALLOW = 0x7fff0000;
const errno = (code: number): number => 0x00050000 | code;
const AUDIT_I386 = 0x40000003;

/** Runs `program` on one struct seccomp_data (nr, arch, args[0]) as the kernel would, returning the action. */
function verdict(program: Instruction[], nr: number, arch: number, arg0 = 0): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr | 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  data.writeBigUInt64LE(BigInt(arg0 >>> 0), 16);
  let accumulator = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const { code, jt, jf, k } = program[pc]!;
    if (code === 0x20) accumulator = data.readUInt32LE(k);
    else if (code === 0x06) return k >>> 0;
    else if (code === 0x15) pc += accumulator === k >>> 0 ? jt : jf;
    else if (code === 0x35) pc += accumulator >= k >>> 0 ? jt : jf;
    else if (code === 0x45) pc += (accumulator & k) !== 0 ? jt : jf;
    else throw new Error(`instruction ${pc}: unexpected code ${code}`);
  }
  throw new Error('the program ran off its end');
}

const SIGCHLD = 17;
/** What glibc's fork() and pthread_create() pass to clone. */
const FORK_FLAGS = 0x01200000 | SIGCHLD;
const THREAD_FLAGS = 0x003d0f00;

for (const [arch, table] of Object.entries(ARCHES)) {
  const program = seccompProgram(arch)!;
  const n = table.numbers;
  const cases: Array<[string, number, number, number, number]> = [
    ['keyctl', n.keyctl!, table.audit, 0, errno(EPERM)],
    ['add_key', n.add_key!, table.audit, 0, errno(EPERM)],
    ['request_key', n.request_key!, table.audit, 0, errno(EPERM)],
    ['unshare(CLONE_NEWUSER)', n.unshare!, table.audit, 0x10000000, errno(EPERM)],
    ['setns', n.setns!, table.audit, 0, errno(EPERM)],
    ['mount', n.mount!, table.audit, 0, errno(EPERM)],
    ['io_uring_setup', n.io_uring_setup!, table.audit, 0, errno(EPERM)],
    ['bpf', n.bpf!, table.audit, 0, errno(EPERM)],
    ['ptrace', n.ptrace!, table.audit, 0, errno(EPERM)],
    ['clone for fork()', n.clone!, table.audit, FORK_FLAGS, ALLOW],
    ['clone for a thread', n.clone!, table.audit, THREAD_FLAGS, ALLOW],
    ['clone(CLONE_NEWUSER)', n.clone!, table.audit, FORK_FLAGS | 0x10000000, errno(EPERM)],
    ['clone(CLONE_NEWNS)', n.clone!, table.audit, 0x00020000, errno(EPERM)],
    ['clone(CLONE_NEWTIME)', n.clone!, table.audit, 0x00000080 | SIGCHLD, errno(EPERM)],
    ['clone3, for libc to fall back to clone', n.clone3!, table.audit, 0, errno(ENOSYS)],
    ['fallocate, for libc to write the blocks instead', n.fallocate!, table.audit, 0, errno(EOPNOTSUPP)],
    ['personality query', n.personality!, table.audit, 0xffffffff, ALLOW],
    ['personality(PER_LINUX)', n.personality!, table.audit, 0, ALLOW],
    ['personality(ADDR_NO_RANDOMIZE)', n.personality!, table.audit, 0x0040000, errno(EPERM)],
    ['personality(READ_IMPLIES_EXEC)', n.personality!, table.audit, 0x0400000, errno(EPERM)],
    // Ordinary calls pass: read, write, openat (same number on both tables or not, both are allowed).
    ['read', 0, table.audit, 0, ALLOW],
    ['write', arch === 'x64' ? 1 : 64, table.audit, 0, ALLOW],
    ['openat', arch === 'x64' ? 257 : 56, table.audit, 0, ALLOW],
    // Another ABI's call is never judged by this table.
    ['an i386 call (int 0x80)', 20, AUDIT_I386, 0, RET_KILL_PROCESS],
    ['a call under the other table\'s arch', 0, arch === 'x64' ? ARCHES.arm64!.audit : ARCHES.x64!.audit, 0, RET_KILL_PROCESS],
  ];
  if (arch === 'x64') cases.push(['an x32 call (bit 30)', 0x40000000 | 1, table.audit, 0, errno(EPERM)]);
  for (const [name, nr, audit, arg0, expected] of cases) {
    test(`seccomp ${arch}: ${name}`, () => {
      assert.is(verdict(program, nr, audit, arg0), expected >>> 0);
    });
  }

  test(`seccomp ${arch}: every denied call that exists there is refused with EPERM`, () => {
    for (const name of DENIED) {
      const nr = n[name];
      if (nr !== undefined) assert.is(verdict(program, nr, table.audit), errno(EPERM), name);
    }
  });

  test(`seccomp ${arch}: every jump lands inside the program, which ends in a return and fits the kernel's 4096`, () => {
    program.forEach(({ code, jt, jf }, pc) => {
      if ((code & 0x07) === 0x05) assert.ok(pc + 1 + Math.max(jt, jf) < program.length, `instruction ${pc}`);
    });
    assert.is(program.at(-1)!.code, 0x06);
    assert.ok(program.length <= 4096);
  });
}

// The numbers are checked against the kernel headers where this machine has them.
const HEADERS: Array<[string, string, RegExp]> = [
  ['x64', '/usr/include/x86_64-linux-gnu/asm/unistd_64.h', /^#define __NR_(\w+)\s+(\d+)$/gm],
  ['arm64', '/usr/include/asm-generic/unistd.h', /^#define __NR(?:3264)?_(\w+)\s+(\d+)$/gm],
];
for (const [arch, header, pattern] of HEADERS) {
  test(`seccomp ${arch}: syscall numbers match ${header}`, () => {
    if (!existsSync(header)) return console.log(`  (skipped: no ${header} here)`);
    const known = new Map([...readFileSync(header, 'utf8').matchAll(pattern)].map((match) => [match[1]!, Number(match[2])]));
    for (const [name, nr] of Object.entries(ARCHES[arch]!.numbers)) assert.is(nr, known.get(name), name);
  });
}

// The installed filter holds every table: under qemu-user the arm64 binary's sandbox sees the
// x86_64 calls of the emulator (and of bwrap itself), which the arm64 table alone would kill.
const ALL = seccompProgramForAll();
for (const [arch, table] of Object.entries(ARCHES)) {
  const n = table.numbers;
  const cases: Array<[string, number, number, number, number]> = [
    ['keyctl', n.keyctl!, table.audit, 0, errno(EPERM)],
    ['shmget', n.shmget!, table.audit, 0, errno(EPERM)],
    ['clone for fork()', n.clone!, table.audit, FORK_FLAGS, ALLOW],
    ['clone(CLONE_NEWUSER)', n.clone!, table.audit, FORK_FLAGS | 0x10000000, errno(EPERM)],
    ['clone3', n.clone3!, table.audit, 0, errno(ENOSYS)],
    ['fallocate', n.fallocate!, table.audit, 0, errno(EOPNOTSUPP)],
    ['personality(ADDR_NO_RANDOMIZE)', n.personality!, table.audit, 0x0040000, errno(EPERM)],
    ['read', 0, table.audit, 0, ALLOW],
    ['openat', arch === 'x64' ? 257 : 56, table.audit, 0, ALLOW],
  ];
  for (const [name, nr, audit, arg0, expected] of cases) {
    test(`seccomp, every table: ${arch} ${name} is judged by the ${arch} table`, () => {
      assert.is(verdict(ALL, nr, audit, arg0), expected >>> 0);
    });
  }
  test(`seccomp, every table: each denied ${arch} call is refused`, () => {
    for (const name of DENIED) {
      const nr = n[name];
      if (nr !== undefined) assert.is(verdict(ALL, nr, table.audit), errno(EPERM), name);
    }
  });
}
test('seccomp, every table: an i386 call is killed, an x32 call refused, and every jump lands inside', () => {
  assert.is(verdict(ALL, 20, AUDIT_I386), RET_KILL_PROCESS >>> 0);
  assert.is(verdict(ALL, 0x40000000 | 1, ARCHES.x64!.audit), errno(EPERM));
  ALL.forEach(({ code, jt, jf }, pc) => {
    if ((code & 0x07) === 0x05) assert.ok(pc + 1 + Math.max(jt, jf) < ALL.length, `instruction ${pc}`);
  });
  assert.ok(ALL.length <= 4096);
});

test('seccompFilter encodes struct sock_filter[] little-endian: 8 bytes an instruction, every table', () => {
  const program = seccompProgramForAll();
  const bytes = seccompFilter('x64')!;
  assert.is(bytes.length, program.length * 8);
  assert.equal([bytes.readUInt16LE(0), bytes[2], bytes[3], bytes.readUInt32LE(4)], [0x20, 0, 0, 4]);
  assert.is(bytes.readUInt32LE(bytes.length - 4), ALLOW);
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
