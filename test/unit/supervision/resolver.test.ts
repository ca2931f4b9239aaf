// resolverDirectory: the one directory of /run a sandbox with the network gets back, and only when
// /etc/resolv.conf really points into /run (systemd-resolved, resolvconf).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolverDirectory } from '../../../supervision/resolver.ts';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-resolver-')));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('a plain file, a link outside /run and a missing file give nothing to bind back', () => {
  writeFileSync(join(dir, 'plain.conf'), 'nameserver 127.0.0.1\n');
  symlinkSync(join(dir, 'plain.conf'), join(dir, 'elsewhere.conf'));
  assert.is(resolverDirectory(join(dir, 'plain.conf')), undefined);
  assert.is(resolverDirectory(join(dir, 'elsewhere.conf')), undefined);
  assert.is(resolverDirectory(join(dir, 'missing.conf')), undefined);
});

test('a link into /run gives the directory of its real target', () => {
  let run: string;
  try {
    run = mkdtempSync('/run/ptc-resolver-');
  } catch (error) {
    return console.log(`  (skipped: cannot make a directory in /run: ${(error as Error).message})`);
  }
  try {
    mkdirSync(join(run, 'resolve'));
    writeFileSync(join(run, 'resolve', 'stub-resolv.conf'), 'nameserver 127.0.0.53\n');
    symlinkSync(join(run, 'resolve', 'stub-resolv.conf'), join(dir, 'resolv.conf'));
    assert.is(resolverDirectory(join(dir, 'resolv.conf')), join(realpathSync(run), 'resolve'));
  } finally {
    rmSync(run, { recursive: true, force: true });
  }
});

test.run();
