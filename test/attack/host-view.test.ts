// Issue 32, "a host view that cannot change" and "nothing root-only within reach" (docs/host-view.md):
// under bwrap the sandbox's root is built from explicit binds, in a mount namespace private from
// the host's. Tried with ptc as root and as an unprivileged user, through the built binary:
// - a retained carrier (`ptc repl`) is running when the host mounts a tmpfs under the workspace,
//   which is a shared mount as on any systemd host; the program's next statement neither sees
//   it nor writes into it (bubblewrap alone would let it in, read-write even under a read-only
//   bind);
// - root-only and other users' files are absent, not merely closed: /etc/shadow, a 0600 root file
//   the test plants, /root, another user's home;
// - what programs legitimately read still works: node, sh, ls, cat /etc/passwd, python3, the
//   workspace, /etc/resolv.conf with the network.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { asUser, binaryFor, intruder, ownedDirectory, removeReachableBinary, runAs, userEnv, victims, type TestUser } from '../helpers/users.ts';

test.after(() => removeReachableBinary());

const isRoot = process.getuid?.() === 0;

/** The error code each read meets, or 'read'. */
function reads(paths: string[]): string {
  return `const { readFileSync, readdirSync, statSync } = await import('node:fs');
return ${JSON.stringify(paths)}.map((path) => { try { statSync(path).isDirectory() ? readdirSync(path) : readFileSync(path); return 'read'; } catch (error) { return error.code; } });`;
}

async function run(user: TestUser, program: string, cwd: string, flags: string[] = []): Promise<unknown> {
  const finished = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'bwrap', ...flags, '-'], { cwd, input: program });
  const result = JSON.parse(finished.stdout) as { status: string; value: unknown; sandbox: { backend: string } };
  assert.equal([result.status, result.sandbox.backend], ['ok', 'bwrap'], finished.stdout + finished.stderr);
  return result.value;
}

/** `ptc repl` as `user` in `cwd`: send(statement) resolves with what the statement printed. */
function repl(user: TestUser, cwd: string, flags: string[]): { send(statement: string): Promise<string>; close(): Promise<void> } {
  const argv = asUser(user, [binaryFor(user), 'repl', ...flags]);
  const child = spawn(argv[0]!, argv.slice(1), { cwd, env: userEnv(user), stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let waiting: { marker: string; resolve(text: string): void } | undefined;
  const check = () => {
    if (waiting === undefined) return;
    const at = out.indexOf(waiting.marker);
    if (at < 0) return;
    const text = out.slice(0, at);
    out = out.slice(at + waiting.marker.length);
    const { resolve } = waiting;
    waiting = undefined;
    resolve(text);
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    check();
  });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  let count = 0;
  return {
    send(statement) {
      // Each statement's value is followed by a marker the test can wait for.
      const marker = `-- statement ${++count} done --`;
      return new Promise((resolve, reject) => {
        waiting = { marker, resolve };
        child.once('close', () => reject(new Error(`ptc repl exited: ${out}${err}`)));
        child.stdin.write(`${statement}\n${JSON.stringify(marker)}\n`);
        check();
      });
    },
    close() {
      return new Promise((resolve) => {
        child.once('close', () => resolve());
        child.stdin.end();
      });
    },
  };
}

function sh(command: string): void {
  const done = spawnSync('sh', ['-c', command], { encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`${command}: ${done.stderr}`);
}

for (const user of victims()) {
  for (const mode of ['read-only', 'workspace-write'] as const) {
    test(`as ${user.name}, ${mode}: a tmpfs the host mounts under the workspace after the sandbox started is neither seen nor written`, async () => {
      if (!isRoot) return console.log('  (skipped: only root can mount on the host)');
      const ws = ownedDirectory(user, 'ptc-host-view-');
      const mountPoint = join(ws.path, 'later');
      mkdirSync(mountPoint);
      if (user.uid !== process.getuid?.()) chownSync(mountPoint, user.uid, user.gid);
      // The workspace as a shared mount of its own: on a systemd host every mount is shared, and
      // bubblewrap's slave namespace would receive what the host mounts under it.
      sh(`mount --bind ${ws.path} ${ws.path} && mount --make-shared ${ws.path}`);
      const session = repl(user, ws.path, ['--sandbox', mode]);
      let mounted = false;
      try {
        assert.match(await session.send(`const fs = await import('node:fs'); 'started'`), 'started');
        sh(`mount -t tmpfs -o mode=0777 ptc-host-view ${mountPoint} && echo host > ${mountPoint}/marker`);
        mounted = true;
        const seen = await session.send(`JSON.stringify([(() => { try { return fs.readFileSync(${JSON.stringify(join(mountPoint, 'marker'))}, 'utf8'); } catch (error) { return error.code; } })(), (() => { try { fs.writeFileSync(${JSON.stringify(join(mountPoint, 'planted'))}, 'x'); return 'written'; } catch (error) { return error.code; } })()])`);
        // Read-only: the directory under it is the read-only workspace's; workspace-write: the
        // write lands in the workspace's own directory, not in the host's mount.
        assert.match(seen, JSON.stringify(['ENOENT', mode === 'read-only' ? 'EROFS' : 'written']));
        assert.not.ok(existsSync(join(mountPoint, 'planted')), 'nothing reached the host\'s mount');
        assert.is(readFileSync(join(mountPoint, 'marker'), 'utf8'), 'host\n');
      } finally {
        await session.close();
        if (mounted) sh(`umount ${mountPoint}`);
        sh(`umount ${ws.path}`);
        ws.remove();
      }
    });
  }

  test(`as ${user.name}: root-only files and other users' homes are absent from the sandbox, not merely closed`, async () => {
    const other = intruder();
    const ws = ownedDirectory(user, 'ptc-host-view-');
    // A 0600 root file in a directory everyone may enter: bwrap over the whole host showed it to root.
    const planted = isRoot ? mkdtempSync('/var/lib/ptc-host-view-') : undefined;
    try {
      const paths = ['/etc/shadow', '/etc/ssh', '/root', '/var', ...(planted === undefined ? [] : [join(planted, 'secret')]), ...(other === undefined ? [] : [other.home])];
      if (planted !== undefined) writeFileSync(join(planted, 'secret'), 'root only', { mode: 0o600 });
      const value = await run(user, reads(paths), ws.path);
      assert.equal(value, paths.map(() => 'ENOENT'), paths.join(' '));
    } finally {
      if (planted !== undefined) rmSync(planted, { recursive: true, force: true });
      ws.remove();
    }
  });

  test(`as ${user.name}: what programs need still reads: node, sh, ls, cat /etc/passwd, python3, the workspace, resolv.conf with the network`, async () => {
    const ws = ownedDirectory(user, 'ptc-host-view-');
    try {
      writeFileSync(join(ws.path, 'data.txt'), 'workspace data');
      if (user.uid !== process.getuid?.()) chownSync(join(ws.path, 'data.txt'), user.uid, user.gid);
      const program = `const { execFileSync } = await import('node:child_process');
const { readFileSync } = await import('node:fs');
const out = (file, args) => execFileSync(file, args, { encoding: 'utf8' }).trim();
return {
  node: out('node', ['-e', 'console.log(1 + 1)']),
  sh: out('sh', ['-c', 'echo sh ok']),
  ls: out('ls', ['/']).split('\\n').includes('usr'),
  passwd: out('cat', ['/etc/passwd']).startsWith('root:'),
  python: out('python3', ['-c', 'import json, ssl; print(json.dumps([1]))']),
  workspace: readFileSync('data.txt', 'utf8'),
  resolver: readFileSync('/etc/resolv.conf', 'utf8').length > 0,
};`;
      const value = await run(user, program, ws.path, ['--sandbox', 'read-only', '--allow-network']);
      assert.equal(value, { node: '2', sh: 'sh ok', ls: true, passwd: true, python: '[1]', workspace: 'workspace data', resolver: true });
    } finally {
      ws.remove();
    }
  });
}

test.run();
