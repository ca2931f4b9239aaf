// The seccomp filter bubblewrap installs right before it runs the carrier (`--seccomp FD`): a
// classic-BPF ALLOWLIST. A call is let through only when it is in one of the groups below (what
// Node, libc and the command-line tools a program starts need), some only with arguments the kernel
// would act on harmlessly; every other call is refused with an errno that libc and Node already
// handle, as a kernel without that call or feature would answer. Namespaces, read-only /proc and
// /sys and dropped capabilities cover files and most privileged calls; the filter takes away the
// rest of the kernel's surface (keyrings, nested namespaces, io_uring, userfaultfd, bpf, perf,
// SysV IPC, ...) by leaving it out, and the ways a file could come to carry privilege (set-user-ID
// and set-group-ID mode bits, file capabilities) by its argument checks. Built the way Docker's
// default profile (moby/profiles/seccomp) and nsjail's Kafel policies are, written here because no
// dependency may be added. Pure: tested as a table (test/unit/seccomp.test.ts) and under the real
// kernel (test/attack/syscall-filter.test.ts, test/attack/kernel-interfaces.test.ts).
//
// Arguments: BPF reads struct seccomp_data in 32-bit words. Every argument tested here is one the
// kernel itself cuts to 32 bits before acting on it (socket's int family, ioctl's unsigned int
// command, personality's unsigned int, the umode_t of chmod/open/mkdir/mknod, open's int flags,
// and clone's flags, of which sys_clone keeps lower_32_bits), so the low word is exactly what the
// kernel decides from; a high word set by the caller changes nothing the kernel does.
import { ARM64_NUMBERS, X64_NUMBERS } from './seccomp-numbers.ts';

/** The fd on which the filter reaches bubblewrap: after stdin, stdout, stderr and the control pipe. */
export const SECCOMP_FD = 4;

/** struct seccomp_data: nr (int), arch (u32), instruction_pointer (u64), args (u64[6]). */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
/** The low 32 bits of args[index] (both architectures are little-endian). */
const argLow = (index: number): number => 16 + 8 * index;

const BPF_LD_W_ABS = 0x20;
const BPF_JA = 0x05;
const BPF_JEQ_K = 0x15;
const BPF_JGT_K = 0x25;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_AND_K = 0x54;
const BPF_RET_K = 0x06;

export const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
/** Whole process, loudly (SIGSYS): a call under another ABI than the ones the tables are for. */
export const RET_KILL_PROCESS = 0x80000000;

/** The default refusal, as for a call that needs a capability the sandbox dropped. */
export const EPERM = 1;
/** For calls whose arguments sit in memory a filter cannot read (clone3, openat2) and calls newer
 * than the tables: glibc then falls back to the older call (clone, openat), as on an older kernel. */
export const ENOSYS = 38;
/** For a netlink protocol other than NETLINK_ROUTE, as a kernel built without it answers. */
export const EPROTONOSUPPORT = 93;
/** For fallocate: it allocates blocks without writing them, which maxDiskMb's count of storage
 * writes would not see; glibc's posix_fallocate then writes the blocks instead, which it does see.
 * For setxattr: "this file system keeps no extended attributes", which cp -a, tar and rsync skip. */
export const EOPNOTSUPP = 95;
/** For a socket family other than the allowed ones, as a kernel built without it answers. */
export const EAFNOSUPPORT = 97;

/** The namespace flags of clone(2); unshare and setns are left out whole. */
export const CLONE_NAMESPACE_FLAGS = 0x00020000 /* NEWNS */ | 0x02000000 /* NEWCGROUP */ | 0x04000000 /* NEWUTS */ | 0x08000000 /* NEWIPC */
  | 0x10000000 /* NEWUSER */ | 0x20000000 /* NEWPID */ | 0x40000000 /* NEWNET */ | 0x00000080 /* NEWTIME */;

/** personality(2) values Docker allows: PER_LINUX, PER_LINUX32, UNAME26 with either, and the query. */
export const ALLOWED_PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];

/** Socket families a program may open: local, IPv4, IPv6, and netlink for getifaddrs (below). */
export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
/** The one netlink protocol allowed: glibc's getifaddrs (libuv's os.networkInterfaces) reads routes. */
export const NETLINK_ROUTE = 0;

/** Terminal ioctls refused (same numbers on both tables, asm-generic): TIOCSTI pushes bytes into a
 * terminal's input, as if typed; TIOCLINUX reaches the console's selection and keyboard; TIOCSETD
 * loads a line discipline (kernel code rarely used, where tty exploits start); TIOCCONS redirects
 * the console. */
export const REFUSED_IOCTLS = { TIOCSTI: 0x5412, TIOCLINUX: 0x541c, TIOCCONS: 0x541d, TIOCSETD: 0x5423 } as const;

/** S_ISUID | S_ISGID: the mode bits through which a file grants privilege to whoever runs it. */
export const PRIVILEGE_MODE_BITS = 0o6000;
/** O_CREAT and __O_TMPFILE (same on both tables): the flags with which open() uses its mode. */
export const CREATING_OPEN_FLAGS = 0o100 | 0o20000000;
const S_IFMT = 0o170000;
/** mknod types allowed: a FIFO (mkfifo), a regular file, and 0, which the kernel takes as regular. */
export const ALLOWED_MKNOD_TYPES = [0, 0o100000 /* S_IFREG */, 0o10000 /* S_IFIFO */];

/**
 * The calls let through whole, by group, each with why. A name missing from an architecture's
 * table (the legacy path calls on arm64) is skipped there.
 */
export const ALLOWED_GROUPS: ReadonlyArray<{ group: string; reason: string; calls: readonly string[] }> = [
  { group: 'memory', reason: 'every process maps, protects and releases memory (V8 heaps, JIT code, malloc, thread stacks)', calls: ['brk', 'mmap', 'munmap', 'mprotect', 'mremap', 'madvise', 'mincore', 'msync', 'mlock', 'mlock2', 'munlock', 'mlockall', 'munlockall', 'membarrier', 'pkey_mprotect', 'pkey_alloc', 'pkey_free', 'memfd_create', 'map_shadow_stack', 'mseal'] },
  { group: 'threads', reason: 'Node\'s worker and libuv threads, glibc\'s thread start-up and locks, qemu-user\'s emulation', calls: ['set_tid_address', 'set_robust_list', 'get_robust_list', 'rseq', 'futex', 'futex_waitv', 'futex_wake', 'futex_wait', 'futex_requeue', 'arch_prctl', 'gettid', 'exit', 'exit_group', 'restart_syscall', 'sched_yield', 'sched_getaffinity', 'sched_setaffinity', 'sched_getparam', 'sched_setparam', 'sched_getscheduler', 'sched_setscheduler', 'sched_get_priority_max', 'sched_get_priority_min', 'sched_rr_get_interval', 'sched_getattr', 'sched_setattr', 'getcpu'] },
  { group: 'processes', reason: 'child processes (child_process, sh, git), waiting for them and signalling them; limits and names of the process itself; seccomp and landlock only narrow what the caller may do', calls: ['fork', 'vfork', 'execve', 'execveat', 'wait4', 'waitid', 'kill', 'tkill', 'tgkill', 'pidfd_open', 'pidfd_send_signal', 'getpid', 'getppid', 'getpgrp', 'getpgid', 'setpgid', 'getsid', 'setsid', 'prctl', 'prlimit64', 'getrlimit', 'setrlimit', 'getrusage', 'getpriority', 'setpriority', 'ioprio_get', 'ioprio_set', 'uname', 'sysinfo', 'umask', 'seccomp', 'landlock_create_ruleset', 'landlock_add_rule', 'landlock_restrict_self'] },
  { group: 'identity', reason: 'reading the ids, and setting them, which without capabilities can only drop to ids the process already has (id, su-style tools, Python\'s os module)', calls: ['getuid', 'geteuid', 'getgid', 'getegid', 'getresuid', 'getresgid', 'getgroups', 'setuid', 'setgid', 'setreuid', 'setregid', 'setresuid', 'setresgid', 'setfsuid', 'setfsgid', 'setgroups', 'capget', 'capset'] },
  { group: 'signals', reason: 'handlers, masks and waits of Node, libuv and every shell', calls: ['rt_sigaction', 'rt_sigprocmask', 'rt_sigreturn', 'rt_sigpending', 'rt_sigtimedwait', 'rt_sigqueueinfo', 'rt_tgsigqueueinfo', 'rt_sigsuspend', 'sigaltstack', 'pause', 'alarm'] },
  { group: 'time', reason: 'clocks, sleeps and timers (the vDSO falls back to these calls)', calls: ['nanosleep', 'clock_nanosleep', 'clock_gettime', 'clock_getres', 'gettimeofday', 'time', 'times', 'getitimer', 'setitimer', 'timer_create', 'timer_settime', 'timer_gettime', 'timer_getoverrun', 'timer_delete', 'timerfd_create', 'timerfd_settime', 'timerfd_gettime'] },
  { group: 'file descriptors', reason: 'reading, writing and copying through open descriptors, pipes and their flags', calls: ['read', 'write', 'readv', 'writev', 'pread64', 'pwrite64', 'preadv', 'pwritev', 'preadv2', 'pwritev2', 'lseek', 'close', 'close_range', 'dup', 'dup2', 'dup3', 'fcntl', 'flock', 'pipe', 'pipe2', 'sendfile', 'splice', 'tee', 'copy_file_range', 'fsync', 'fdatasync', 'syncfs', 'sync', 'sync_file_range', 'fadvise64', 'readahead', 'ftruncate', 'truncate'] },
  { group: 'events', reason: 'libuv\'s event loop (epoll, eventfd, signalfd, timerfd), fs.watch (inotify), poll and select of other programs', calls: ['poll', 'ppoll', 'select', 'pselect6', 'epoll_create', 'epoll_create1', 'epoll_ctl', 'epoll_wait', 'epoll_pwait', 'epoll_pwait2', 'eventfd', 'eventfd2', 'signalfd', 'signalfd4', 'inotify_init', 'inotify_init1', 'inotify_add_watch', 'inotify_rm_watch'] },
  { group: 'paths', reason: 'the file system calls node:fs, coreutils and git make that cannot add privilege to a file (mode-setting calls are filtered below)', calls: ['stat', 'lstat', 'fstat', 'newfstatat', 'statx', 'statfs', 'fstatfs', 'access', 'faccessat', 'faccessat2', 'getdents', 'getdents64', 'getcwd', 'chdir', 'fchdir', 'rename', 'renameat', 'renameat2', 'rmdir', 'link', 'linkat', 'unlink', 'unlinkat', 'symlink', 'symlinkat', 'readlink', 'readlinkat', 'chown', 'fchown', 'lchown', 'fchownat', 'utime', 'utimes', 'futimesat', 'utimensat'] },
  { group: 'extended attributes, reading and removing', reason: 'ls, cp and Python read them; removing one can only take away (setting them is refused: file capabilities live there)', calls: ['getxattr', 'lgetxattr', 'fgetxattr', 'listxattr', 'llistxattr', 'flistxattr', 'removexattr', 'lremovexattr', 'fremovexattr'] },
  { group: 'sockets', reason: 'using a socket once made (socket and socketpair themselves are filtered by family below)', calls: ['connect', 'accept', 'accept4', 'bind', 'listen', 'getsockname', 'getpeername', 'sendto', 'recvfrom', 'sendmsg', 'recvmsg', 'sendmmsg', 'recvmmsg', 'shutdown', 'setsockopt', 'getsockopt'] },
  { group: 'randomness', reason: 'V8, OpenSSL and Python seed from getrandom', calls: ['getrandom'] },
];

/** Refused by name with an errno of their own, rather than the default EPERM. */
export const REFUSED_WITH: Readonly<Record<string, number>> = {
  clone3: ENOSYS, // its flags are in memory: glibc falls back to clone, whose flags are checked.
  openat2: ENOSYS, // its mode is in memory: glibc and libuv fall back to openat, whose mode is checked.
  fallocate: EOPNOTSUPP,
  setxattr: EOPNOTSUPP, lsetxattr: EOPNOTSUPP, fsetxattr: EOPNOTSUPP, setxattrat: EOPNOTSUPP, // security.capability, security.*
  getxattrat: ENOSYS, listxattrat: ENOSYS, removexattrat: ENOSYS, // 6.13's *at forms: callers fall back to the path forms.
  // Newer calls with an older way to the same answer, which libc and util-linux take on ENOSYS (and
  // not on EPERM): /proc/self/mountinfo, mincore, /proc/self/attr, the FS_IOC_FSGETXATTR ioctl.
  statmount: ENOSYS, listmount: ENOSYS, cachestat: ENOSYS, lsm_get_self_attr: ENOSYS, lsm_list_modules: ENOSYS, file_getattr: ENOSYS,
};

/**
 * Left out of the allowlist on purpose, refused with EPERM like any call not listed: the kernel's
 * shared state and rarely used attack surface, which the test tables check stay refused. Root
 * inside shares the host root's keyrings (and request_key's upcall runs a helper as host root); a
 * nested user namespace grants every capability inside it; io_uring, userfaultfd, bpf and perf are
 * where unprivileged kernel exploits start; SysV IPC, POSIX message queues and Linux AIO hold kernel
 * memory no process's RSS shows; ptrace-like calls reach other processes; the rest is the machine's.
 */
export const REFUSED_SURFACE = [
  'keyctl', 'add_key', 'request_key',
  'unshare', 'setns',
  'mount', 'umount2', 'pivot_root', 'chroot', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'move_mount', 'open_tree', 'mount_setattr',
  'shmget', 'shmat', 'shmctl', 'shmdt', 'semget', 'semop', 'semctl', 'semtimedop', 'msgget', 'msgsnd', 'msgrcv', 'msgctl', 'mq_open', 'io_setup', 'io_submit',
  'bpf', 'perf_event_open', 'userfaultfd', 'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'memfd_secret', 'vmsplice',
  'ptrace', 'process_vm_readv', 'process_vm_writev', 'pidfd_getfd', 'kcmp',
  'kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'reboot', 'swapon', 'swapoff', 'acct', 'syslog',
  'iopl', 'ioperm', 'modify_ldt', 'open_by_handle_at', 'name_to_handle_at', 'quotactl', 'quotactl_fd', 'lookup_dcookie', 'vhangup', 'nfsservctl',
  'uselib', '_sysctl', 'create_module', 'get_kernel_syms', 'query_module', 'fanotify_init', 'settimeofday', 'clock_settime', 'adjtimex',
  'sethostname', 'setdomainname',
] as const;

/** How a filtered call's arguments decide. */
type ArgumentCheck =
  | { kind: 'clone' } | { kind: 'personality' } | { kind: 'socket' } | { kind: 'socketpair' } | { kind: 'ioctl' }
  | { kind: 'mode'; arg: number } // chmod-like and mkdir-like: no S_ISUID/S_ISGID in the mode
  | { kind: 'create'; flags: number; mode: number } // open-like: the same, when the flags create a file
  | { kind: 'mknod'; arg: number }; // no device nodes, no S_ISUID/S_ISGID

/** The calls let through only with the arguments their check accepts. */
export const FILTERED: Readonly<Record<string, ArgumentCheck>> = {
  clone: { kind: 'clone' },
  personality: { kind: 'personality' },
  socket: { kind: 'socket' },
  socketpair: { kind: 'socketpair' },
  ioctl: { kind: 'ioctl' },
  chmod: { kind: 'mode', arg: 1 },
  fchmod: { kind: 'mode', arg: 1 },
  fchmodat: { kind: 'mode', arg: 2 },
  fchmodat2: { kind: 'mode', arg: 2 },
  mkdir: { kind: 'mode', arg: 1 },
  mkdirat: { kind: 'mode', arg: 2 },
  creat: { kind: 'mode', arg: 1 },
  open: { kind: 'create', flags: 1, mode: 2 },
  openat: { kind: 'create', flags: 2, mode: 3 },
  mknod: { kind: 'mknod', arg: 1 },
  mknodat: { kind: 'mknod', arg: 2 },
};

export interface SeccompArch {
  /** AUDIT_ARCH_* of <linux/audit.h>: what the kernel reports for a call made under this ABI. */
  audit: number;
  /** Numbers at or above this belong to another ABI sharing the architecture (x86's x32). */
  abiLimit?: number;
  /** Numbers from the kernel's syscall table; a name missing here does not exist on the arch. */
  numbers: Readonly<Record<string, number>>;
}

export const ARCHES: Record<string, SeccompArch> = {
  x64: { audit: 0xc000003e, abiLimit: 0x40000000, numbers: X64_NUMBERS },
  arm64: { audit: 0xc00000b7, numbers: ARM64_NUMBERS },
};

/** One sock_filter instruction. */
export interface Instruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** The filter's instructions for one architecture's table, or undefined where no table exists:
 * a call made under any other ABI is killed. */
export function seccompProgram(arch: string): Instruction[] | undefined {
  const table = Object.hasOwn(ARCHES, arch) ? ARCHES[arch] : undefined;
  return table === undefined ? undefined : dispatch([table]);
}

/**
 * The filter bwrap installs: every table, each judging the calls made under its own audit arch,
 * and a kill for any other. Not only `process.arch`'s: under qemu-user (the arm64 binary on an
 * x86_64 machine) the kernel sees the emulator's x86_64 calls, and bwrap itself is native.
 */
export function seccompProgramForAll(): Instruction[] {
  return dispatch(Object.values(ARCHES));
}

function dispatch(tables: SeccompArch[]): Instruction[] {
  // Each table's section is longer than a conditional jump reaches, so the match jumps with BPF_JA.
  const pieces: Piece[] = [load(ARCH_OFFSET)];
  tables.forEach((table, index) => pieces.push(jump(BPF_JEQ_K, table.audit, 0, 1), { jumpTo: `table ${index}` }));
  pieces.push(ret(RET_KILL_PROCESS));
  tables.forEach((table, index) => pieces.push({ label: `table ${index}` }, ...section(table)));
  return resolve(pieces);
}

/** What a range of call numbers leads to: a return, or the argument check of that name. */
type Verdict = { ret: number } | { check: string };
interface Range {
  /** The first number of the range; it runs up to the next range's first. */
  from: number;
  verdict: Verdict;
}

/** The numbers 0 to the newest known, cut into ranges of one verdict each (unnamed numbers: EPERM). */
function ranges(numbers: Readonly<Record<string, number>>): Range[] {
  const byNumber = new Map<number, Verdict>();
  const add = (name: string, verdict: Verdict): void => {
    const nr = numbers[name];
    if (nr !== undefined) byNumber.set(nr, verdict);
  };
  for (const { calls } of ALLOWED_GROUPS) for (const name of calls) add(name, { ret: RET_ALLOW });
  for (const name of Object.keys(FILTERED)) add(name, { check: name });
  for (const [name, code] of Object.entries(REFUSED_WITH)) add(name, { ret: RET_ERRNO | code });
  const refused: Verdict = { ret: RET_ERRNO | EPERM };
  const list: Range[] = [];
  const newest = Math.max(...Object.values(numbers));
  for (let nr = 0; nr <= newest; nr++) {
    const verdict = byNumber.get(nr) ?? refused;
    const last = list.at(-1);
    const same = last !== undefined && ('ret' in verdict ? 'ret' in last.verdict && last.verdict.ret === verdict.ret : false);
    if (!same) list.push({ from: nr, verdict });
  }
  return list;
}

/** The highest number a table knows: a larger one is a call newer than ptc, refused with ENOSYS. */
export function newestKnown(table: SeccompArch): number {
  return Math.max(...Object.values(table.numbers));
}

/** An instruction, a place a far jump lands on, or a far jump (BPF_JA, whose 32-bit offset reaches anywhere). */
type Piece = Instruction | { label: string } | { jumpTo: string };

/**
 * One table's rules: the call's number is found by a binary search over the ranges (a few
 * comparisons for any call, rather than one per listed call), and each range returns or runs its
 * argument check in place. A conditional jump over more than jt's 8 bits goes through a BPF_JA.
 */
function section(table: SeccompArch): Piece[] {
  const pieces: Piece[] = [load(NR_OFFSET)];
  // x32 calls carry x86_64's audit arch with bit 30 set in the number: a second ABI, refused whole.
  if (table.abiLimit !== undefined) pieces.push(jump(BPF_JGE_K, table.abiLimit, 0, 1), ret(RET_ERRNO | EPERM));
  pieces.push(jump(BPF_JGT_K, newestKnown(table), 0, 1), ret(RET_ERRNO | ENOSYS));
  let labels = 0;
  const search = (list: Range[]): Piece[] => {
    if (list.length === 1) {
      const { verdict } = list[0]!;
      return 'ret' in verdict ? [ret(verdict.ret)] : argumentCheck(FILTERED[verdict.check]!);
    }
    const middle = Math.floor(list.length / 2);
    const lower = search(list.slice(0, middle));
    const upper = search(list.slice(middle));
    const pivot = list[middle]!.from;
    const span = lower.filter((piece) => !('label' in piece)).length;
    if (span <= 255) return [jump(BPF_JGE_K, pivot, span, 0), ...lower, ...upper];
    const label = `${table.audit} upper ${labels++}`;
    return [jump(BPF_JGE_K, pivot, 0, 1), { jumpTo: label }, ...lower, { label }, ...upper];
  };
  pieces.push(...search(ranges(table.numbers)));
  return pieces;
}

/** Lays out the pieces: labels take no room, far jumps get the distance to their label. */
function resolve(pieces: Piece[]): Instruction[] {
  const places = new Map<string, number>();
  let pc = 0;
  for (const piece of pieces) {
    if ('label' in piece) places.set(piece.label, pc);
    else pc++;
  }
  const program: Instruction[] = [];
  for (const piece of pieces) {
    if ('label' in piece) continue;
    if ('jumpTo' in piece) program.push({ code: BPF_JA, jt: 0, jf: 0, k: places.get(piece.jumpTo)! - program.length - 1 });
    else program.push(piece);
  }
  return program;
}

/** The instructions of one check; each path ends in its own return. */
function argumentCheck(check: ArgumentCheck): Instruction[] {
  const refuse = ret(RET_ERRNO | EPERM);
  const allow = ret(RET_ALLOW);
  switch (check.kind) {
    case 'clone':
      return [load(argLow(0)), jump(BPF_JSET_K, CLONE_NAMESPACE_FLAGS, 0, 1), refuse, allow];
    case 'personality':
      return [load(argLow(0)), ...oneOf(ALLOWED_PERSONALITIES, allow, refuse)];
    case 'socket':
      return [
        load(argLow(0)),
        jump(BPF_JEQ_K, AF_NETLINK, 0, 4),
        load(argLow(2)),
        jump(BPF_JEQ_K, NETLINK_ROUTE, 0, 1),
        allow,
        ret(RET_ERRNO | EPROTONOSUPPORT),
        ...oneOf([AF_UNIX, AF_INET, AF_INET6], allow, ret(RET_ERRNO | EAFNOSUPPORT)),
      ];
    case 'socketpair':
      return [load(argLow(0)), jump(BPF_JEQ_K, AF_UNIX, 0, 1), allow, ret(RET_ERRNO | EAFNOSUPPORT)];
    case 'ioctl':
      return [load(argLow(1)), ...oneOf(Object.values(REFUSED_IOCTLS), refuse, allow)];
    case 'mode':
      return [load(argLow(check.arg)), jump(BPF_JSET_K, PRIVILEGE_MODE_BITS, 0, 1), refuse, allow];
    case 'create':
      return [
        load(argLow(check.flags)),
        jump(BPF_JSET_K, CREATING_OPEN_FLAGS, 1, 0),
        allow,
        load(argLow(check.mode)),
        jump(BPF_JSET_K, PRIVILEGE_MODE_BITS, 0, 1),
        refuse,
        allow,
      ];
    case 'mknod':
      return [
        load(argLow(check.arg)),
        jump(BPF_JSET_K, PRIVILEGE_MODE_BITS, 0, 1),
        refuse,
        { code: BPF_AND_K, jt: 0, jf: 0, k: S_IFMT },
        ...oneOf(ALLOWED_MKNOD_TYPES, allow, refuse),
      ];
  }
}

/** Compares the accumulator with each value: any match reaches `hit`, none falls to `miss`. */
function oneOf(values: readonly number[], hit: Instruction, miss: Instruction): Instruction[] {
  const count = values.length;
  return [...values.map((value, index) => jump(BPF_JEQ_K, value, count - index, 0)), miss, hit];
}

/** The filter as bwrap reads it from its fd: struct sock_filter[] in the machine's (little)
 * endianness; undefined where `arch` (this Node's) has no table, so bwrap is not offered. */
export function seccompFilter(arch: string = process.arch): Buffer | undefined {
  if (seccompUnavailable(arch) !== undefined) return undefined;
  // Every bwrap launch sends it: built once per process (the tables are constants), copied per launch.
  filterBytes ??= encodeFilter(seccompProgramForAll());
  return Buffer.from(filterBytes);
}

/** The filter's bytes, once built (the same for every arch that has a table: it holds them all). */
let filterBytes: Buffer | undefined;

function encodeFilter(program: Instruction[]): Buffer {
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(({ code, jt, jf, k }, index) => {
    bytes.writeUInt16LE(code, index * 8);
    bytes.writeUInt8(jt, index * 8 + 2);
    bytes.writeUInt8(jf, index * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, index * 8 + 4);
  });
  return bytes;
}

/** Why bwrap cannot confine on this architecture, or undefined when it can. */
export function seccompUnavailable(arch: string = process.arch): string | undefined {
  return Object.hasOwn(ARCHES, arch) ? undefined : `ptc has no seccomp filter for the ${arch} architecture (only ${Object.keys(ARCHES).join(' and ')}), and bubblewrap without one leaves a root program the host's keyrings and nested user namespaces`;
}

function load(offset: number): Instruction {
  return { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: offset };
}

function jump(code: number, k: number, jt: number, jf: number): Instruction {
  return { code, jt, jf, k };
}

function ret(k: number): Instruction {
  return { code: BPF_RET_K, jt: 0, jf: 0, k };
}
