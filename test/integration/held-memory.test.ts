// What the maxMemoryMb watchdog adds to VmRSS (supervision/resources/held.ts), read from a real
// bubblewrap sandbox: the tmpfs mounts of its own (one hidden under another holds nothing and is
// not counted as the one on top), memfd files open in it, and never the host's own mounts that it sees (its /dev/shm, and
// /tmp when the host's is a tmpfs).
import { spawn } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { heldBytes } from '../../supervision/resources/held.ts';
import { treeOf } from '../../supervision/resources/proc.ts';

const MIB = 1024 * 1024;

test('heldBytes counts the sandbox\'s tmpfs use and memfd blocks, once each, and not the host\'s mounts', async () => {
  const script = [
    'dd if=/dev/zero of=/mnt/f bs=1M count=2 2>/dev/null',
    // A memfd of 3 MiB, held open while the host looks.
    'exec /usr/bin/python3 -c \'import os, sys, time\nfd = os.memfd_create("m")\nos.write(fd, bytes(3 << 20))\nprint("ready", flush=True)\ntime.sleep(60)\'',
  ].join('; ');
  const child = spawn('bwrap', [
    '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
    // The first /mnt is hidden by the second, which a statfs of /mnt measures: it must count once.
    '--size', String(MIB), '--tmpfs', '/mnt', '--size', String(8 * MIB), '--tmpfs', '/mnt',
    '--unshare-pid', '--die-with-parent', '--', 'sh', '-c', script,
  ], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const ready = await new Promise<string>((resolve) => child.stdout.setEncoding('utf8').once('data', resolve));
    assert.is(ready.trim(), 'ready');
    // The /dev tmpfs holds only device nodes (no blocks).
    assert.is(heldBytes(treeOf(child.pid!)), (2 + 3) * MIB);
  } finally {
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
  }
});

test('heldBytes of a process in the host\'s own mount namespace is 0: its tmpfs mounts hold the host\'s memory', () => {
  assert.is(heldBytes([process.pid]), 0);
});

test.run();
