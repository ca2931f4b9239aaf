// Which `ptc run` command lines the resident pool's fast path takes whole (host/cli/resident-client.ts
// residentRun): the rest go to the ordinary parser, which gives its own errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { residentRun } from '../../../../host/cli/resident-client.ts';

test('takes a file or -, the booleans, --cwd, --mode, --bindings and the limit flags, as the ordinary parser reads them', () => {
  assert.equal(residentRun(['job.ts']), { file: 'job.ts', json: false, discardCompletion: false, cwd: undefined, config: { prestartCarrier: false } });
  assert.equal(residentRun(['-', '--json', '--discard-completion', '--cwd', 'sub', '--mode=vm-script', '--bindings', 't.mjs', '--timeout-ms', '500', '--grace-ms=-1']), {
    file: '-', json: true, discardCompletion: true, cwd: 'sub', bindings: 't.mjs', config: { prestartCarrier: false, executionMode: 'vm-script', timeoutMs: 500, graceMs: -1 },
  });
  assert.equal(residentRun([])?.file, undefined);
});

test('leaves to the ordinary parser anything else, so that its errors are the usual ones', () => {
  const refused = [
    ['a.ts', 'b.ts'], ['--json=true', 'a.ts'], ['--no-json', 'a.ts'], ['--timeout-ms', 'abc', 'a.ts'], ['--timeout-ms', '', 'a.ts'],
    ['--timeout-ms', '5', '--timeout-ms', '6', 'a.ts'], ['--mode', 'nope', 'a.ts'], ['--config', 'c.json', 'a.ts'], ['--help'], ['-h'],
    ['--toString', '5', 'a.ts'], ['--constructor', '5'], ['--sandbox', 'read-only', 'a.ts'], ['--cwd'], ['--cwd', '--json'], ['--', 'a.ts'],
    ['--allow-network', 'a.ts'], ['--remote', 'h', 'a.ts'], ['-x', 'a.ts'],
  ];
  for (const argv of refused) assert.is(residentRun(argv), undefined, argv.join(' '));
});

test.run();
