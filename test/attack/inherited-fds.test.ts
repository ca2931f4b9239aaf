// dist/ptc started from a shell that left fd 200 open on a file outside every root (issue 16,
// item 3), as root and as the victim, under bwrap and node-permission: the program finds no such
// descriptor, and neither it nor a child process writes through it. The library host's case, over
// every launch, is test/integration/inherited-fds.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROBE_FD } from '../helpers/inherited-fd.ts';
import { binaryFor, ownedDirectory, removeReachableBinary, runAs, victims } from '../helpers/users.ts';

const PROGRAM = PROBE_FD;

const EXPECTED = {
  bwrap: { write: 'EBADF', fstat: 'EBADF', listed: false, child: 'refused' },
  'node-permission': { write: 'EBADF', fstat: 'EBADF', listed: 'ERR_ACCESS_DENIED', child: 'ERR_ACCESS_DENIED' },
};

test.after(() => removeReachableBinary());

for (const victim of victims()) {
  for (const backend of ['bwrap', 'node-permission'] as const) {
    test(`${victim.name}, ${backend}: a descriptor the shell left open reaches neither the program nor its children`, async () => {
      const dir = ownedDirectory(victim, 'ptc-attack-fd-');
      try {
        // Outside the workspace (the program's cwd, a subdirectory), in a file the victim may write.
        const target = join(dir.path, 'outside.txt');
        const workspace = join(dir.path, 'ws');
        const program = join(dir.path, 'program.ts');
        writeFileSync(target, '');
        writeFileSync(program, PROGRAM);
        mkdirSync(workspace);
        for (const path of [target, program, workspace]) chownSync(path, victim.uid, victim.gid);
        const finished = await runAs(victim, ['bash', '-c', 'exec 200<>"$1"; shift; exec "$@"', 'bash', target, binaryFor(victim), 'run', '--json', '--sandbox-backend', backend, '--cwd', workspace, program], { cwd: workspace });
        const result = JSON.parse(finished.stdout) as { status: string; value?: unknown };
        assert.is(result.status, 'ok', finished.stdout + finished.stderr);
        assert.equal(result.value, EXPECTED[backend]);
        assert.is(readFileSync(target, 'utf8'), '');
      } finally {
        dir.remove();
      }
    });
  }
}

test.run();
