// The sandbox's fresh root as read from this machine (supervision/host-view.ts), and the prefix
// that starts bwrap in a mount namespace private from the host's (supervision/private-mounts.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, lstatSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ETC_ENTRIES, SYSTEM_DIRECTORIES, systemEntries } from '../../../supervision/host-view.ts';
import { bwrapCommand, locateUnshare, unshareArgs } from '../../../supervision/private-mounts.ts';

test('systemEntries: what exists of the system directories and the /etc list, and nothing else', () => {
  const entries = systemEntries();
  const paths = entries.map((entry) => entry.path);
  assert.ok(paths.includes('/usr') && paths.includes('/etc/passwd'), paths.join(' '));
  for (const secret of ['/etc/shadow', '/etc/gshadow', '/etc/ssh', '/etc/ssl/private', '/root', '/home', '/var', '/etc']) assert.not.ok(paths.includes(secret), secret);
  for (const path of paths) {
    assert.ok(existsSync(path) || lstatSync(path).isSymbolicLink(), path);
    assert.ok(SYSTEM_DIRECTORIES.includes(path) || ETC_ENTRIES.includes(path) || /^\/etc\/python3(\.\d+)?$/.test(path), path);
  }
});

test('systemEntries: a link into /usr stays a link to its real target, /etc/mtab keeps its /proc/self target', () => {
  for (const entry of systemEntries()) {
    if (entry.kind !== 'symlink') continue;
    if (entry.path === '/etc/mtab') assert.not.match(entry.target, /^\/proc\/\d/, entry.target);
    else if (existsSync(entry.path)) assert.is(entry.target, realpathSync(entry.path), entry.path);
  }
});

test('unshareArgs: root needs only a mount namespace; another user maps only itself in a user namespace', () => {
  assert.equal(unshareArgs(0), ['--mount', '--propagation', 'private']);
  assert.equal(unshareArgs(1000), ['--user', '--map-current-user', '--mount', '--propagation', 'private']);
});

test('bwrapCommand: bwrap itself without a prefix, else the prefix running bwrap', () => {
  assert.equal(bwrapCommand('/usr/bin/bwrap', ['--ro-bind', '/usr', '/usr'], undefined), { executable: '/usr/bin/bwrap', args: ['--ro-bind', '/usr', '/usr'] });
  assert.equal(bwrapCommand('/usr/bin/bwrap', ['--', 'true'], { executable: '/usr/bin/unshare', args: ['--mount'] }), { executable: '/usr/bin/unshare', args: ['--mount', '/usr/bin/bwrap', '--', 'true'] });
});

test('locateUnshare: PATH\'s absolute directories first, never a relative one', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-unshare-')));
  try {
    writeFileSync(join(dir, 'unshare'), '#!/bin/sh\n', { mode: 0o755 });
    assert.is(locateUnshare(`relative:${dir}`), join(dir, 'unshare'));
    const fallback = locateUnshare('relative');
    assert.ok(fallback === undefined || fallback.endsWith('/unshare'), String(fallback));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
