// How the host finds where to make a carrier's cgroups (v2 with delegation, else v1 where it may
// write), table-driven over the layouts it meets (this machine's cgroup v1 hybrid among them), and
// how it reads /proc/<pid>/stat and status.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cgroup2Mount, findCgroupBase, type CgroupBase, cgroupKeeps, findCgroups, findCgroupV1 } from '../../../../supervision/resources/cgroup.ts';
import { parseStat, residentBytes, treeUsage, threadCount, treeTasks } from '../../../../supervision/resources/proc.ts';

const UNIFIED = '35 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot';
const HYBRID = [
  '30 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755',
  '31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw',
  '32 30 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,memory',
].join('\n');

/** A file system as a table: path -> contents; paths in `writable` pass the access check. */
function files(table: Record<string, string>, writable: string[] = []) {
  return { read: (path: string) => table[path], writable: (path: string) => writable.includes(path) };
}

const CASES: Array<[string, ReturnType<typeof files>, ReturnType<typeof findCgroupBase>]> = [
  [
    'cgroup v1 only: no 0:: line',
    files({ '/proc/self/cgroup': '4:memory:/user.slice\n1:name=systemd:/user.slice\n', '/proc/self/mountinfo': '' }),
    { unavailable: 'this process is in no cgroup v2 hierarchy (no "0::" line in /proc/self/cgroup)' },
  ],
  [
    'a hybrid whose cgroup2 has no memory controller (this machine)',
    files({ '/proc/self/cgroup': '4:memory:/x\n0::/\n', '/proc/self/mountinfo': HYBRID, '/sys/fs/cgroup/unified/cgroup.controllers': 'hugetlb\n' }, ['/sys/fs/cgroup/unified', '/sys/fs/cgroup/unified/cgroup.subtree_control']),
    { unavailable: 'the memory controller is not available to /sys/fs/cgroup/unified (cgroup.controllers: "hugetlb")' },
  ],
  [
    'a container at its cgroup namespace root with memory: ptc enables it for children',
    files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': UNIFIED, '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory pids\n', '/sys/fs/cgroup/cgroup.subtree_control': '' }, ['/sys/fs/cgroup', '/sys/fs/cgroup/cgroup.subtree_control']),
    { version: 2, directory: '/sys/fs/cgroup', enableMemory: true, enablePids: true },
  ],
  [
    'a delegated cgroup that already hands memory to its children',
    files({
      '/proc/self/cgroup': '0::/user.slice/user-1000.slice/user@1000.service/ptc.scope\n',
      '/proc/self/mountinfo': UNIFIED,
      '/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/ptc.scope/cgroup.controllers': 'memory pids',
      '/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/ptc.scope/cgroup.subtree_control': 'memory pids',
    }, ['/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/ptc.scope', '/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/ptc.scope/cgroup.subtree_control']),
    { version: 2, directory: '/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/ptc.scope', enableMemory: false, enablePids: false },
  ],
  [
    'a non-root cgroup holding ptc that does not delegate memory',
    files({ '/proc/self/cgroup': '0::/session.scope\n', '/proc/self/mountinfo': UNIFIED, '/sys/fs/cgroup/session.scope/cgroup.controllers': 'memory', '/sys/fs/cgroup/session.scope/cgroup.subtree_control': '' }, ['/sys/fs/cgroup/session.scope', '/sys/fs/cgroup/session.scope/cgroup.subtree_control']),
    { unavailable: '/sys/fs/cgroup/session.scope does not delegate memory to child cgroups (cgroup.subtree_control), and a cgroup that holds processes cannot' },
  ],
  [
    'memory offered but not writable by this user',
    files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': UNIFIED, '/sys/fs/cgroup/cgroup.controllers': 'memory' }),
    { unavailable: '/sys/fs/cgroup is not writable by this process' },
  ],
  [
    'no cgroup2 mounted',
    files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': HYBRID.split('\n')[0]! }),
    { unavailable: 'no cgroup2 file system is mounted (/proc/self/mountinfo)' },
  ],
  [
    'a cgroup2 mount of a subtree (bind-mounted into a container): paths are taken relative to its root',
    files({
      '/proc/self/cgroup': '0::/machine/box/app\n',
      '/proc/self/mountinfo': '40 30 0:30 /machine/box /sys/fs/cgroup rw - cgroup2 cgroup2 rw',
      '/sys/fs/cgroup/app/cgroup.controllers': 'memory',
      '/sys/fs/cgroup/app/cgroup.subtree_control': 'memory',
    }, ['/sys/fs/cgroup/app', '/sys/fs/cgroup/app/cgroup.subtree_control']),
    { version: 2, directory: '/sys/fs/cgroup/app', enableMemory: false },
  ],
  [
    'a cgroup outside the mounted subtree',
    files({ '/proc/self/cgroup': '0::/elsewhere\n', '/proc/self/mountinfo': '40 30 0:30 /machine/box /sys/fs/cgroup rw - cgroup2 cgroup2 rw' }),
    { unavailable: "this process's cgroup /elsewhere is outside the cgroup2 mount at /sys/fs/cgroup (root /machine/box)" },
  ],
];

for (const [name, layout, expected] of CASES) {
  test(`cgroup detection: ${name}`, () => {
    assert.equal(findCgroupBase(layout), expected);
  });
}

// cgroup v1: this machine's and CI's layout (hybrid, v1 controllers, kernel 6.18), as root and not.
const V1_MOUNTS = [
  '30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:9 - tmpfs tmpfs rw,mode=755',
  '31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw',
  '32 30 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,memory',
  '33 30 0:29 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,pids',
  '34 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct',
].join('\n');
const V1_SELF = '8:pids:/\n4:memory:/process_api/a1\n2:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n';
const V1_DIRECTORIES = ['/sys/fs/cgroup/memory/process_api/a1', '/sys/fs/cgroup/pids', '/sys/fs/cgroup/cpu,cpuacct'];

const V1_CASES: Array<[string, ReturnType<typeof files>, CgroupBase]> = [
  [
    'v1 as root: memory, pids and cpuacct under its own cgroups (cpuacct co-mounted with cpu)',
    files({ '/proc/self/cgroup': V1_SELF, '/proc/self/mountinfo': V1_MOUNTS }, V1_DIRECTORIES),
    { version: 1, directories: { memory: '/sys/fs/cgroup/memory/process_api/a1', pids: '/sys/fs/cgroup/pids', cpuacct: '/sys/fs/cgroup/cpu,cpuacct' } },
  ],
  [
    'v1 as an unprivileged user: nothing writable, so the watchdog',
    files({ '/proc/self/cgroup': V1_SELF, '/proc/self/mountinfo': V1_MOUNTS }),
    { unavailable: '/sys/fs/cgroup/memory/process_api/a1 is not writable by this process; /sys/fs/cgroup/pids is not writable by this process; /sys/fs/cgroup/cpu,cpuacct is not writable by this process' },
  ],
  [
    'v1 without a pids hierarchy: memory and cpuacct only',
    files({ '/proc/self/cgroup': V1_SELF, '/proc/self/mountinfo': V1_MOUNTS.split('\n').filter((line) => !line.includes(',pids')).join('\n') }, V1_DIRECTORIES),
    { version: 1, directories: { memory: '/sys/fs/cgroup/memory/process_api/a1', cpuacct: '/sys/fs/cgroup/cpu,cpuacct' } },
  ],
  [
    'v1 in a container whose hierarchies are mounted at its own cgroup: paths relative to the mount root',
    files({
      '/proc/self/cgroup': '5:memory:/docker/c1\n3:pids:/docker/c1\n2:cpuacct:/docker/c1/inner\n',
      '/proc/self/mountinfo': [
        '40 30 0:28 /docker/c1 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory',
        '41 30 0:29 /docker/c1 /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids',
        '42 30 0:30 /docker/c1 /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct',
      ].join('\n'),
    }, ['/sys/fs/cgroup/memory', '/sys/fs/cgroup/pids', '/sys/fs/cgroup/cpuacct/inner']),
    { version: 1, directories: { memory: '/sys/fs/cgroup/memory', pids: '/sys/fs/cgroup/pids', cpuacct: '/sys/fs/cgroup/cpuacct/inner' } },
  ],
  [
    'v1 hierarchies not mounted, no cgroup2 either',
    files({ '/proc/self/cgroup': V1_SELF, '/proc/self/mountinfo': '' }),
    { unavailable: 'no memory hierarchy is mounted; no pids hierarchy is mounted; no cpuacct hierarchy is mounted' },
  ],
  [
    "a v1 cgroup outside its hierarchy's mount",
    files({ '/proc/self/cgroup': '3:pids:/elsewhere\n', '/proc/self/mountinfo': '41 30 0:29 /docker/c1 /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids' }),
    { unavailable: "no memory hierarchy is mounted; this process's pids cgroup /elsewhere is outside its mount at /sys/fs/cgroup/pids (root /docker/c1); no cpuacct hierarchy is mounted" },
  ],
];

for (const [name, layout, expected] of V1_CASES) {
  test(`cgroup v1 detection: ${name}`, () => {
    assert.equal(findCgroupV1(layout), expected);
  });
}

test('findCgroups prefers v2 with memory, else v1, else says why neither', () => {
  const v2 = files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': UNIFIED, '/sys/fs/cgroup/cgroup.controllers': 'memory pids', '/sys/fs/cgroup/cgroup.subtree_control': '' }, ['/sys/fs/cgroup', '/sys/fs/cgroup/cgroup.subtree_control']);
  assert.equal(findCgroups(v2), { version: 2, directory: '/sys/fs/cgroup', enableMemory: true, enablePids: true });
  // This machine as root: the hybrid's cgroup2 has no controllers, so v1.
  const hybrid = files({ '/proc/self/cgroup': V1_SELF, '/proc/self/mountinfo': V1_MOUNTS, '/sys/fs/cgroup/unified/cgroup.controllers': '' }, [...V1_DIRECTORIES, '/sys/fs/cgroup/unified']);
  assert.is((findCgroups(hybrid) as { version: number }).version, 1);
  const neither = files({ '/proc/self/cgroup': V1_SELF, '/proc/self/mountinfo': V1_MOUNTS, '/sys/fs/cgroup/unified/cgroup.controllers': '' });
  assert.equal(findCgroups(neither), {
    unavailable: 'cgroup v2: the memory controller is not available to /sys/fs/cgroup/unified (cgroup.controllers: ""); cgroup v1: /sys/fs/cgroup/memory/process_api/a1 is not writable by this process; /sys/fs/cgroup/pids is not writable by this process; /sys/fs/cgroup/cpu,cpuacct is not writable by this process',
  });
});

test('cgroupKeeps says what the kernel keeps in each kind, never more', () => {
  assert.equal(cgroupKeeps({ unavailable: 'none here' }), { memory: false, tasks: false, cpu: false });
  assert.equal(cgroupKeeps({ version: 2, directory: '/x', enableMemory: false }), { memory: true, tasks: false, cpu: true });
  assert.equal(cgroupKeeps({ version: 2, directory: '/x', enableMemory: false, enablePids: false }), { memory: true, tasks: true, cpu: true });
  assert.equal(cgroupKeeps({ version: 1, directories: { pids: '/p' } }), { memory: false, tasks: true, cpu: false });
  assert.equal(cgroupKeeps({ version: 1, directories: { memory: '/m', pids: '/p', cpuacct: '/c' } }), { memory: true, tasks: true, cpu: true });
});

test('threadCount reads Threads:, and a status without it still holds a task; treeTasks counts this process', () => {
  assert.is(threadCount('Name:\tnode\nThreads:\t11\n'), 11);
  assert.is(threadCount('Name:\tnode\nState:\tZ (zombie)\n'), 1);
  assert.ok(treeTasks(process.pid) >= 1);
  assert.is(treeTasks(2 ** 22 + 1), 0);
});

test('cgroup2Mount unescapes octal sequences in mount points', () => {
  assert.equal(cgroup2Mount('41 30 0:31 / /run/my\\040cgroups rw - cgroup2 none rw'), { point: '/run/my cgroups', root: '/' });
  assert.is(cgroup2Mount(HYBRID.split('\n')[2]!), undefined);
});

test('parseStat counts fields from the last ")" so a command name cannot shift them', () => {
  const tail = 'S 1 1 1 0 -1 4194560 100 0 0 0 1234 56 78 9 20 0 1 0 5 0 0';
  assert.equal(parseStat(`42 (node) ${tail}`), { utime: 1234, stime: 56, cutime: 78, cstime: 9 });
  assert.equal(parseStat(`42 (a) b) (c) ${tail}`), { utime: 1234, stime: 56, cutime: 78, cstime: 9 });
  assert.is(parseStat('42 node S 1'), undefined);
  assert.is(parseStat('42 (node) S 1 1'), undefined);
});

test('residentBytes reads VmRSS; a zombie has none', () => {
  assert.is(residentBytes('Name:\tnode\nVmRSS:\t   51200 kB\nThreads:\t7\n'), 51_200 * 1024);
  assert.is(residentBytes('Name:\tnode\nState:\tZ (zombie)\n'), 0);
});

test('treeUsage of this process: counts it, with its CPU time and memory', () => {
  const before = treeUsage(process.pid);
  const start = process.cpuUsage();
  while (process.cpuUsage(start).user < 100_000);
  const after = treeUsage(process.pid);
  assert.ok(after.processes >= 1);
  assert.ok(after.rssBytes > 10 * 1024 * 1024, `${after.rssBytes} bytes`);
  // The kernel counts in 10 ms ticks: 100 ms of spinning shows as at least 80.
  assert.ok(after.cpuMs - before.cpuMs >= 80, `${after.cpuMs - before.cpuMs} ms`);
  assert.equal(treeUsage(2 ** 22 + 1), { cpuMs: 0, rssBytes: 0, processes: 0 });
});

test.run();
