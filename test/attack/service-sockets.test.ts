// Issue 16: the host's service sockets under /run with the network allowed. A network namespace
// does not cover Unix sockets on the file system, and /run was shared whenever policy.network was
// true: root reached docker's, containerd's, the system bus and systemd's private socket (each a
// way to run anything as host root), any user reached its session bus (systemd-run --user runs
// outside the sandbox). A stand-in service listens in /run, owned by the user ptc runs as, mode
// 0600 like systemd's private socket and a session bus; the program tries to connect to it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { binaryFor, ownedDirectory, removeReachableBinary, runAs, victims, type TestUser } from '../helpers/users.ts';

async function listen(user: TestUser): Promise<{ path: string; close(): Promise<void> }> {
  const dir = mkdtempSync('/run/ptc-attack-');
  chmodSync(dir, 0o755);
  const path = join(dir, 'service.sock');
  const server: Server = createServer((socket) => socket.end('host service\n'));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  chownSync(path, user.uid, user.gid);
  chmodSync(path, 0o600);
  return { path, close: () => new Promise((resolve) => server.close(() => { rmSync(dir, { recursive: true, force: true }); resolve(); })) };
}

function program(path: string): string {
  return `const net = await import('node:net');
return await new Promise((resolve) => {
  const socket = net.connect(${JSON.stringify(path)});
  socket.setEncoding('utf8').on('data', (text) => resolve('connected: ' + text.trim()));
  socket.on('error', (error) => resolve(error.code));
});`;
}

for (const user of victims()) {
  for (const network of [['--allow-network'], []]) {
    test(`dist/ptc run as ${user.name}, ${network.length === 0 ? 'no network' : 'network allowed'}: a service socket under /run is out of reach`, async () => {
      const service = await listen(user);
      const ws = ownedDirectory(user);
      try {
        const run = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'bwrap', ...network, '-'], { cwd: ws.path, input: program(service.path) });
        const result = JSON.parse(run.stdout) as { status: string; value: string; sandbox: { backend: string; network: boolean } };
        assert.equal([result.status, result.sandbox.backend, result.sandbox.network], ['ok', 'bwrap', network.length > 0], run.stdout);
        assert.is(result.value, 'ENOENT');
      } finally {
        ws.remove();
        await service.close();
      }
    });
  }

  // The pinned Node's model (25 and later) refuses every connection without --allow-net, Unix sockets included.
  test(`dist/ptc run as ${user.name}, node-permission on Node ${process.versions.node}, no network: a service socket under /run is refused`, async () => {
    const service = await listen(user);
    const ws = ownedDirectory(user);
    try {
      const run = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'node-permission', '-'], { cwd: ws.path, input: program(service.path) });
      const result = JSON.parse(run.stdout) as { status: string; value: string; sandbox: { backend: string; network: boolean } };
      assert.equal([result.status, result.sandbox.backend, result.sandbox.network, result.value], ['ok', 'node-permission', false, 'ERR_ACCESS_DENIED'], run.stdout);
    } finally {
      ws.remove();
      await service.close();
    }
  });
}

test.after(() => removeReachableBinary());

test.run();
