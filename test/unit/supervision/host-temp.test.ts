// Which host directories the sweep takes for dead (supervision/host-temp.ts): named by
// process, judged by pid, start time, boot and pid namespace; never this process's own, never a
// live process's, never one from another pid namespace, never an entry that is not a 0700
// directory of this user.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deadHostDirectories, hostTempDirectory, privateDirectory } from '../../../supervision/host-temp.ts';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-host-temp-')));
const uid = process.getuid!();
const namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))![1]!;
const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replace(/[^0-9a-f]/g, '').slice(0, 8);
const startOf = (pid: number): string => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
};

function entry(name: string, { mode = 0o700 } = {}): string {
  const path = join(base, name);
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
}

test.after(() => rmSync(base, { recursive: true, force: true }));

test('the host directory is 0700, in the base, named for this process; a carrier\'s directory is inside it', () => {
  const own = hostTempDirectory(base);
  assert.match(own, new RegExp(`^${base}/ptc-${uid}-${process.pid}-${startOf(process.pid)}-${namespace}-${boot}-[^/-]+$`));
  const tmp = privateDirectory('tmp', base);
  assert.ok(tmp.startsWith(`${own}/tmp-`), tmp);
  assert.is(hostTempDirectory(base), own);
});

test('dead: a pid that is gone, a pid now held by another process, an earlier boot; kept: live, own, other namespaces, foreign entries', () => {
  const own = hostTempDirectory(base);
  const gone = entry(`ptc-${uid}-999999999-1-${namespace}-${boot}-aaaaaa`);
  const reused = entry(`ptc-${uid}-${process.ppid}-1-${namespace}-${boot}-bbbbbb`);
  const rebooted = entry(`ptc-${uid}-${process.ppid}-${startOf(process.ppid)}-${namespace}-${boot === '00000001' ? '00000002' : '00000001'}-cccccc`);
  entry(`ptc-${uid}-${process.ppid}-${startOf(process.ppid)}-${namespace}-${boot}-dddddd`); // the parent: alive
  entry(`ptc-${uid}-999999999-1-1-${boot}-eeeeee`); // another pid namespace: its pids mean nothing here
  entry(`ptc-${uid + 1}-999999999-1-${namespace}-${boot}-ffffff`); // another user's name
  entry(`ptc-${uid}-999999998-1-${namespace}-${boot}-gggggg`, { mode: 0o755 }); // not private: not made by ptc
  symlinkSync(gone, join(base, `ptc-${uid}-999999997-1-${namespace}-${boot}-hhhhhh`)); // a symlink is never swept
  entry('ptc-compile-cache-0');
  assert.equal(deadHostDirectories(base).sort(), [gone, rebooted, reused].sort());
  assert.ok(!deadHostDirectories(base).includes(own));
});

test.run();
