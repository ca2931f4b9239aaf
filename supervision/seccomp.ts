// The seccomp filter bubblewrap installs right before it runs the carrier (`--seccomp FD`): a
// classic-BPF program that refuses the system calls through which a program could reach the
// kernel's shared state or its rarely used attack surface. Namespaces, read-only /proc and /sys
// and dropped capabilities cover files and most privileged calls, but not these: root keeps the
// host's keyrings (keyctl, and request_key's upcall runs a helper as host root), any user can make
// a nested user namespace (full capabilities inside it, over a large kernel surface), and
// io_uring, userfaultfd, bpf and perf_event_open are where unprivileged kernel exploits start.
// The rest (mount, modules, kexec, reboot, swap, ...) already need a dropped capability and are
// refused twice. Modelled on the default profiles of Docker (moby/profiles/seccomp) and Flatpak
// (flatpak-run.c), written here because no dependency may be added. Pure: tested as a table.

/** The fd on which the filter reaches bubblewrap: after stdin, stdout, stderr and the control pipe. */
export const SECCOMP_FD = 4;

/** struct seccomp_data: nr (int), arch (u32), instruction_pointer (u64), args (u64[6]). */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
/** The low 32 bits of args[0] (both architectures are little-endian). */
const ARG0_OFFSET = 16;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;

const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
/** Whole process, loudly (SIGSYS): a call under another ABI than the one the table is for. */
export const RET_KILL_PROCESS = 0x80000000;

export const EPERM = 1;
/** For clone3, whose flags sit in memory a filter cannot read: glibc then falls back to clone. */
export const ENOSYS = 38;

/** For fallocate: it allocates blocks without writing them, which maxDiskMb's count of storage
 * writes would not see; glibc's posix_fallocate then writes the blocks instead, which it does see. */
export const EOPNOTSUPP = 95;

/** The namespace flags of clone(2); unshare and setns are refused whole. */
export const CLONE_NAMESPACE_FLAGS = 0x00020000 /* NEWNS */ | 0x02000000 /* NEWCGROUP */ | 0x04000000 /* NEWUTS */ | 0x08000000 /* NEWIPC */
  | 0x10000000 /* NEWUSER */ | 0x20000000 /* NEWPID */ | 0x40000000 /* NEWNET */ | 0x00000080 /* NEWTIME */;

/** personality(2) values Docker allows: PER_LINUX, PER_LINUX32, UNAME26 with either, and the query. */
export const ALLOWED_PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];

/** Refused outright, with EPERM. */
export const DENIED = [
  // Kernel keyrings: root inside shares the host root's user and session keyrings.
  'keyctl', 'add_key', 'request_key',
  // Namespaces: a nested user namespace grants every capability inside it.
  'unshare', 'setns',
  // Mounts, old and new API.
  'mount', 'umount2', 'pivot_root', 'chroot', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'move_mount', 'open_tree', 'mount_setattr',
  // System V shared memory: a detached segment holds memory that no process's RSS shows, and
  // maxMemoryMb's watchdog cannot see into the sandbox's ipc namespace (POSIX shm is /dev/shm, sized).
  'shmget', 'shmat',
  // Kernel attack surface a program has no use for.
  'bpf', 'perf_event_open', 'userfaultfd', 'io_uring_setup', 'io_uring_enter', 'io_uring_register',
  // Other processes' memory and the seccomp bypass of old kernels.
  'ptrace', 'process_vm_writev', 'pidfd_getfd', 'kcmp',
  // The machine itself.
  'kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'reboot', 'swapon', 'swapoff', 'acct', 'syslog',
  'iopl', 'ioperm', 'open_by_handle_at', 'quotactl', 'quotactl_fd', 'lookup_dcookie', 'vhangup', 'nfsservctl', 'uselib', '_sysctl',
  'create_module', 'get_kernel_syms', 'query_module', 'fanotify_init',
] as const;

type Syscall = (typeof DENIED)[number] | 'clone' | 'clone3' | 'personality' | 'fallocate';

export interface SeccompArch {
  /** AUDIT_ARCH_* of <linux/audit.h>: what the kernel reports for a call made under this ABI. */
  audit: number;
  /** Numbers at or above this belong to another ABI sharing the architecture (x86's x32). */
  abiLimit?: number;
  /** Numbers from the kernel's syscall table; a name missing here does not exist on the arch. */
  numbers: Partial<Record<Syscall, number>>;
}

/** From arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h (arm64). */
export const ARCHES: Record<string, SeccompArch> = {
  x64: {
    audit: 0xc000003e,
    abiLimit: 0x40000000,
    numbers: {
      keyctl: 250, add_key: 248, request_key: 249, unshare: 272, setns: 308, mount: 165, umount2: 166, pivot_root: 155, chroot: 161,
      fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, move_mount: 429, open_tree: 428, mount_setattr: 442, bpf: 321, perf_event_open: 298,
      userfaultfd: 323, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, ptrace: 101, process_vm_writev: 311, pidfd_getfd: 438,
      kcmp: 312, kexec_load: 246, kexec_file_load: 320, init_module: 175, finit_module: 313, delete_module: 176, reboot: 169, swapon: 167,
      swapoff: 168, acct: 163, syslog: 103, iopl: 172, ioperm: 173, open_by_handle_at: 304, quotactl: 179, quotactl_fd: 443, lookup_dcookie: 212,
      vhangup: 153, nfsservctl: 180, uselib: 134, _sysctl: 156, create_module: 174, get_kernel_syms: 177, query_module: 178, fanotify_init: 300,
      shmget: 29, shmat: 30, clone: 56, clone3: 435, personality: 135, fallocate: 285,
    },
  },
  arm64: {
    audit: 0xc00000b7,
    numbers: {
      keyctl: 219, add_key: 217, request_key: 218, unshare: 97, setns: 268, mount: 40, umount2: 39, pivot_root: 41, chroot: 51,
      fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, move_mount: 429, open_tree: 428, mount_setattr: 442, bpf: 280, perf_event_open: 241,
      userfaultfd: 282, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, ptrace: 117, process_vm_writev: 271, pidfd_getfd: 438,
      kcmp: 272, kexec_load: 104, kexec_file_load: 294, init_module: 105, finit_module: 273, delete_module: 106, reboot: 142, swapon: 224,
      swapoff: 225, acct: 89, syslog: 116, open_by_handle_at: 265, quotactl: 60, quotactl_fd: 443, lookup_dcookie: 18, vhangup: 58,
      nfsservctl: 42, fanotify_init: 262, shmget: 194, shmat: 196, clone: 220, clone3: 435, personality: 92, fallocate: 47,
    },
  },
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
  const sections = tables.map(section);
  const program: Instruction[] = [load(ARCH_OFFSET)];
  let start = 1 + tables.length + 1;
  tables.forEach((table, index) => {
    program.push(jump(BPF_JEQ_K, table.audit, start - (1 + index) - 1, 0));
    start += sections[index]!.length;
  });
  program.push(ret(RET_KILL_PROCESS));
  for (const instructions of sections) program.push(...instructions);
  return program;
}

/** One table's rules, from loading the call's number to the final allow. */
function section(table: SeccompArch): Instruction[] {
  const { numbers } = table;
  const program: Instruction[] = [load(NR_OFFSET)];
  // x32 calls carry x86_64's audit arch with bit 30 set in the number: a second table, refused whole.
  if (table.abiLimit !== undefined) program.push(jump(BPF_JGE_K, table.abiLimit, 0, 1), ret(RET_ERRNO | EPERM));
  for (const name of DENIED) {
    const nr = numbers[name];
    if (nr !== undefined) program.push(jump(BPF_JEQ_K, nr, 0, 1), ret(RET_ERRNO | EPERM));
  }
  program.push(jump(BPF_JEQ_K, numbers.clone3!, 0, 1), ret(RET_ERRNO | ENOSYS));
  program.push(jump(BPF_JEQ_K, numbers.fallocate!, 0, 1), ret(RET_ERRNO | EOPNOTSUPP));
  // Each argument check ends in a return of its own: the accumulator no longer holds the number.
  program.push(
    jump(BPF_JEQ_K, numbers.clone!, 0, 4),
    load(ARG0_OFFSET),
    jump(BPF_JSET_K, CLONE_NAMESPACE_FLAGS, 0, 1),
    ret(RET_ERRNO | EPERM),
    ret(RET_ALLOW),
  );
  const allowed = ALLOWED_PERSONALITIES.length;
  program.push(jump(BPF_JEQ_K, numbers.personality!, 0, allowed + 3), load(ARG0_OFFSET));
  ALLOWED_PERSONALITIES.forEach((value, index) => program.push(jump(BPF_JEQ_K, value, allowed - index, 0)));
  program.push(ret(RET_ERRNO | EPERM), ret(RET_ALLOW));
  program.push(ret(RET_ALLOW));
  return program;
}

/** The filter as bwrap reads it from its fd: struct sock_filter[] in the machine's (little)
 * endianness; undefined where `arch` (this Node's) has no table, so bwrap is not offered. */
export function seccompFilter(arch: string = process.arch): Buffer | undefined {
  if (seccompUnavailable(arch) !== undefined) return undefined;
  const program = seccompProgramForAll();
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
