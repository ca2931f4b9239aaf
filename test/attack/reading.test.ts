// Issue 16, the threat model's "reading files" row: confinement is about writes, so a program reads
// what the user ptc runs as reads. Under bwrap, root (with no capabilities) still reads a 0600 file
// of its own (/etc/shadow stands for it) but not another user's 0600 file, which only
// CAP_DAC_OVERRIDE would open; an unprivileged user reads neither. Under node-permission /proc and
// the shared temp space are not granted, whoever reads.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binaryFor, intruder, ownedDirectory, removeReachableBinary, runAs, victims, type TestUser } from '../helpers/users.ts';

test.after(() => removeReachableBinary());

/** The error code each read meets, or 'read'. */
function reads(paths: string[]): string {
  return `const { readFileSync } = await import('node:fs');
return ${JSON.stringify(paths)}.map((path) => { try { readFileSync(path); return 'read'; } catch (error) { return error.code; } });`;
}

async function run(user: TestUser, program: string, backend: 'bwrap' | 'node-permission'): Promise<unknown> {
  const ws = ownedDirectory(user, 'ptc-reading-');
  try {
    const finished = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', backend, '--require-enforcement', 'partial', '-'], { cwd: ws.path, input: program });
    const result = JSON.parse(finished.stdout) as { status: string; value: unknown; sandbox: { backend: string } };
    assert.equal([result.status, result.sandbox.backend], ['ok', backend], finished.stdout);
    return result.value;
  } finally {
    ws.remove();
  }
}

const other = intruder();
// Another user's private file, in a directory everyone may enter (its mode alone closes it).
const foreign = mkdtempSync('/var/tmp/ptc-reading-');
const foreignFile = join(foreign, 'private');
writeFileSync(foreignFile, 'theirs', { mode: 0o600 });
if (other !== undefined) chownSync(foreignFile, other.uid, other.gid);
test.after(() => rmSync(foreign, { recursive: true, force: true }));

for (const user of victims()) {
  const root = user.uid === 0;
  test(`as ${user.name}, bwrap: /etc/shadow ${root ? 'is read (root without capabilities still owns it)' : 'is not read'}${other === undefined ? '' : ', another user\'s 0600 file is not'}`, async () => {
    const value = await run(user, reads(['/etc/shadow', ...(other === undefined ? [] : [foreignFile])]), 'bwrap');
    assert.equal(value, [root ? 'read' : 'EACCES', ...(other === undefined ? [] : ['EACCES'])]);
  });

  test(`as ${user.name}, node-permission: /proc, /dev (but its plain devices) and the shared temp space are not granted`, async () => {
    const shared = mkdtempSync('/tmp/ptc-reading-shared-');
    try {
      writeFileSync(join(shared, 'f'), 'x', { mode: 0o644 });
      const value = await run(user, reads(['/proc/self/status', '/dev/pts/ptmx', join(shared, 'f')]), 'node-permission');
      assert.equal(value, ['ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED']);
    } finally {
      rmSync(shared, { recursive: true, force: true });
    }
  });
}

test.run();
