// Issue 16, the threat model's "reading files" row. Under bwrap the sandbox's root holds only what
// it binds (issue 32, docs/host-view.md): /etc/shadow and another user's file elsewhere on the host
// are absent (ENOENT) for root and any other user alike; a 0600 file another user keeps inside the
// workspace stays closed to root without capabilities (kernel-interfaces.test.ts). Under
// node-permission a program reads what its user reads, but /proc and the shared temp space are not
// granted, whoever reads.
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
  test(`as ${user.name}, bwrap: /etc/shadow${other === undefined ? '' : ' and another user\'s 0600 file'} are not in the sandbox`, async () => {
    const value = await run(user, reads(['/etc/shadow', ...(other === undefined ? [] : [foreignFile])]), 'bwrap');
    assert.equal(value, ['ENOENT', ...(other === undefined ? [] : ['ENOENT'])]);
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
