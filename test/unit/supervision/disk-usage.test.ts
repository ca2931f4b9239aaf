// maxDiskMb's configuration (host/runtime/resource-limits.ts) and the measurements behind it
// (supervision/disk-usage.ts): the default, the refusals, /proc/<pid>/io parsing, and the
// walk of a RAM-backed directory (blocks held, hard links once, an inode at least a page).
import { linkSync, mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveConfig } from '../../../host/runtime/config.ts';
import { diskMessage, directoryBytes, parseIo, ramBackedDirectories } from '../../../supervision/disk-usage.ts';
import { thrown } from '../../helpers/assert.ts';

const MIB = 1024 * 1024;

test('maxDiskMb defaults to 1024 MiB, null turns it off, and an ssh launch keeps it (its relay watches)', () => {
  assert.is(resolveConfig({}).maxDiskMb, 1024);
  assert.is(resolveConfig({ maxDiskMb: null }).maxDiskMb, null);
  assert.is(resolveConfig({ maxDiskMb: 10 }).maxDiskMb, 10);
  assert.is(resolveConfig({ maxDiskMb: 10, launch: { kind: 'ssh', destination: 'h' } }).maxDiskMb, 10);
});

for (const value of [0, -1, 1.5, '64', Number.NaN]) {
  test(`maxDiskMb ${String(value)} is refused, quoted`, () => {
    assert.match(thrown(() => resolveConfig({ maxDiskMb: value })).message, /^ptc config: maxDiskMb must be a positive integer or null for none, got /);
  });
}

test('parseIo: write_bytes less cancelled_write_bytes; anything else is unreadable', () => {
  const io = 'rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 0\nwrite_bytes: 8192\ncancelled_write_bytes: 4096\n';
  assert.is(parseIo(io), 4096);
  assert.is(parseIo('rchar: 10\n'), undefined);
});

test('directoryBytes counts allocated blocks, a page at least per inode, and each hard link once', () => {
  const directory = mkdtempSync('/dev/shm/ptc-disk-unit-');
  try {
    writeFileSync(join(directory, 'data'), Buffer.alloc(MIB, 1));
    for (let index = 0; index < 50; index++) linkSync(join(directory, 'data'), join(directory, `link-${index}`));
    writeFileSync(join(directory, 'sparse'), '');
    truncateSync(join(directory, 'sparse'), 1024 * MIB);
    mkdirSync(join(directory, 'empty'));
    for (let index = 0; index < 10; index++) writeFileSync(join(directory, 'empty', String(index)), '');
    // data (1 MiB), then a page each for the sparse file, the two directories and the ten empty files.
    assert.is(directoryBytes([directory]), MIB + 13 * 4096);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test('ramBackedDirectories keeps the tmpfs ones, each once, and drops those inside another', () => {
  const directory = mkdtempSync('/dev/shm/ptc-disk-unit-');
  try {
    mkdirSync(join(directory, 'inner'));
    assert.equal(ramBackedDirectories([directory, join(directory, 'inner'), '/proc', '/nonexistent']), [directory]);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test('diskMessage names the limit and what was used, rounded up, and splits it when RAM-backed directories hold some', () => {
  assert.is(diskMessage(64, { storageBytes: 64 * MIB + 1, ramBytes: 0 }), "the carrier's process tree wrote 65 MiB to disk, over its maxDiskMb limit of 64 MiB, and was killed");
  assert.is(diskMessage(2048, { storageBytes: MIB, ramBytes: 2048 * MIB }), "the carrier's process tree wrote 2,049 MiB to disk (1 MiB written to storage, 2,048 MiB held in RAM-backed writable directories), over its maxDiskMb limit of 2,048 MiB, and was killed");
});

test.run();
