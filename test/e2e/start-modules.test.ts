// What a CLI start loads: only the modules on the path the command takes (issue 19). A module's
// cost is paid by every start that loads it, so the test names built-ins that only other paths
// need: the library's (child_process, for carriers) are not loaded by `--version` or `--help`,
// nor Node's assert, fs/promises or perf_hooks,
// and the network proxy's node:http is not loaded by a run without an allowlist. Checked through
// the binary and from source, with a preload that lists the built-ins at exit.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const PRELOAD = join(repoRoot, 'test', 'fixtures', 'start', 'loaded-builtins.cjs');
const work = mkdtempSync(join(tmpdir(), 'ptc-start-modules-'));
const program = join(work, 'return1.ts');
writeFileSync(program, 'return 1\n');

const launches: Array<[string, (args: string[]) => [string, string[]]]> = [
  ['dist/ptc', (args) => [BIN, args]],
  ['source', (args) => [process.execPath, [join(repoRoot, 'host', 'cli', 'bin.ts'), ...args]]],
];

/** Runs a CLI start and returns its stdout and the built-ins it loaded. */
function start(launch: (args: string[]) => [string, string[]], args: string[]): { stdout: string; builtins: string[] } {
  const [file, argv] = launch(args);
  if (file === BIN) assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const result = spawnSync(file, argv, { cwd: work, encoding: 'utf8', env: { PATH: '/usr/bin:/bin', NODE_OPTIONS: `--require ${PRELOAD}` }, timeout: 60_000 });
  assert.is(result.status, 0, `${args.join(' ')} exited with ${result.status}: ${result.stderr}`);
  const line = result.stderr.split('\n').find((text) => text.startsWith('@builtins '));
  assert.ok(line !== undefined, `the preload reported nothing: ${result.stderr}`);
  return { stdout: result.stdout, builtins: JSON.parse(line.slice('@builtins '.length)) as string[] };
}

// From source the version comes from the library (the binary's from its build), so only the binary is checked.
test('ptc --version and --help load no library (dist/ptc)', () => {
  for (const args of [['--version'], ['--help']]) {
    const { stdout, builtins } = start(launches[0]![1], args);
    assert.match(stdout, args[0] === '--version' ? /^ptc \d+\.\d+\.\d+\n$/ : /ptc run \[file\]/);
    assert.equal(builtins.filter((builtin) => ['child_process', 'http', 'crypto'].includes(builtin)), [], `${args[0]} loaded ${builtins.join(' ')}`);
    // Node's assert (yargs' platform shim imports it; the bundle has build/shims/assert.ts in its
    // place), fs/promises (only the commands that read files load it) and perf_hooks (boot marks
    // record only under the bench's probe) each cost milliseconds of every start.
    assert.equal(builtins.filter((builtin) => ['assert', 'fs/promises', 'perf_hooks'].includes(builtin)), [], `${args[0]} loaded ${builtins.join(' ')}`);
  }
});

for (const [name, launch] of launches) {
  test(`ptc run without an allowlist loads no network proxy (${name})`, () => {
    const { stdout, builtins } = start(launch, ['run', program, '--json']);
    assert.is(JSON.parse(stdout).value, 1);
    assert.ok(builtins.includes('child_process'), 'the run started no carrier');
    assert.equal(builtins.filter((builtin) => builtin === 'http' || builtin === '_http_server'), [], `ptc run loaded ${builtins.join(' ')}`);
  });
}

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
