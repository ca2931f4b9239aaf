// Validation of the remote launch kinds (host/runtime/config.ts): each mistake throws naming the
// field and quoting the value; a valid ssh or command launch is kept as given.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveConfig } from '../../../../host/runtime/config.ts';
import { thrown } from '../../../helpers/assert.ts';

const CASES: Array<[string, unknown, string]> = [
  ['unknown kind', { kind: 'telnet' }, 'ptc config: launch.kind must be one of "embedded", "node-script", "ssh", "command", got \'telnet\''],
  ['ssh without destination', { kind: 'ssh' }, 'ptc config: launch.destination is required for launch.kind "ssh" (user@host, a Host alias, or ssh://user@host:port)'],
  ['ssh destination that ssh would read as an option', { kind: 'ssh', destination: '-oProxyCommand=x' }, 'ptc config: launch.destination must be user@host, a Host alias or ssh://user@host:port, got \'-oProxyCommand=x\''],
  ['ssh destination with a space', { kind: 'ssh', destination: 'a b' }, 'ptc config: launch.destination must be user@host, a Host alias or ssh://user@host:port, got \'a b\''],
  ['ssh port out of range', { kind: 'ssh', destination: 'h', port: 70000 }, 'ptc config: launch.port must be an integer from 1 to 65535, got 70000'],
  ['sshArgs not strings', { kind: 'ssh', destination: 'h', sshArgs: ['-F', 1] }, 'ptc config: launch.sshArgs must be an array of strings, got [ \'-F\', 1 ]'],
  ['ssh with a node-script field', { kind: 'ssh', destination: 'h', executable: '/usr/bin/node' }, 'ptc config: unknown field "launch.executable" for launch.kind "ssh"'],
  ['empty node', { kind: 'ssh', destination: 'h', node: '' }, 'ptc config: launch.node must be a non-empty string, got \'\''],
  ['command without bootstrapPath', { kind: 'command', command: ['docker', 'exec', '-i', 'box'] }, 'ptc config: launch.bootstrapPath is required for launch.kind "command" (where bootstrap.mjs is on the far side)'],
  ['empty command', { kind: 'command', command: [], bootstrapPath: '/b.mjs' }, 'ptc config: launch.command must be a non-empty array of strings, got []'],
  // From source this host is Node, not the ptc binary: re-executing it would start no carrier.
  ['embedded without executable outside the binary', { kind: 'embedded' }, `ptc config: launch.kind "embedded" without launch.executable re-executes this binary, and this host is not the ptc binary but Node (${process.execPath}); give launch.executable, the path of dist/ptc`],
];

for (const [name, launch, message] of CASES) {
  test(`launch: ${name} is refused`, () => {
    assert.is(thrown(() => resolveConfig({ launch })).message, message);
  });
}

test('valid remote launches are kept as given', () => {
  const ssh = { kind: 'ssh', destination: 'ssh://deploy@build-7:2222', sshArgs: ['-F', './ssh_config'], node: '/opt/node/bin/node' };
  assert.equal(resolveConfig({ launch: ssh }).launch, ssh);
  const command = { kind: 'command', command: ['kubectl', 'exec', '-i', 'pod', '--'], bootstrapPath: '/opt/ptc/bootstrap.mjs' };
  assert.equal(resolveConfig({ launch: command }).launch, command);
});

test.run();
