// A descriptor the host inherited from whoever started it (a shell's `exec 200<>file`, socket
// activation, a harness that leaks fds) must not reach the program: the carrier keeps only stdin,
// stdout, stderr and its control channel. The host here is a library host started from bash with
// fd 200 open on a file outside every root (test/fixtures/launch/inherited-fd-host.ts, which uses
// createTestRuntime, so test/run.ts repeats this for every launch).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../helpers/runtime.ts';
import { PROBE_FD } from '../helpers/inherited-fd.ts';

const root = mkdtempSync(join(realpathSync(tmpdir()), 'ptc-inherited-fd-'));
const workspace = join(root, 'ws');
const target = join(root, 'outside.txt');
mkdirSync(workspace);
test.after(() => rmSync(root, { recursive: true, force: true }));


function hostWithFd200(backend: string): Promise<{ result: any; stderr: string }> {
  return new Promise((resolve, reject) => {
    const host = spawn('bash', ['-c', 'exec 200<>"$1"; shift; exec "$@"', 'bash', target, process.execPath, join(repoRoot, 'test/fixtures/launch/inherited-fd-host.ts'), PROBE_FD, backend, workspace], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    host.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    host.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    host.once('error', reject);
    host.once('close', () => {
      try {
        resolve({ result: JSON.parse(stdout), stderr });
      } catch {
        reject(new Error(`the host printed no result: ${stdout}${stderr}`));
      }
    });
  });
}

test('bwrap: the carrier has no descriptor the host inherited; neither it nor a child can write through it', async () => {
  writeFileSync(target, '');
  const { result, stderr } = await hostWithFd200('bwrap');
  assert.is(result.status, 'ok', JSON.stringify(result) + stderr);
  assert.equal(result.value, { write: 'EBADF', fstat: 'EBADF', listed: false, child: 'refused' });
  assert.is(readFileSync(target, 'utf8'), '');
});

test('node-permission: the carrier has no descriptor the host inherited; nothing writes through it', async () => {
  writeFileSync(target, '');
  const { result, stderr } = await hostWithFd200('node-permission');
  assert.is(result.status, 'ok', JSON.stringify(result) + stderr);
  // The permission model hides /proc/self/fd and refuses child processes; the descriptor is gone.
  assert.equal(result.value, { write: 'EBADF', fstat: 'EBADF', listed: 'ERR_ACCESS_DENIED', child: 'ERR_ACCESS_DENIED' });
  assert.is(readFileSync(target, 'utf8'), '');
});

test.run();
