// What the CLI says when it is used wrongly or asked for help, through the built binary, word for
// word: an unknown option or command named once with the nearest known one, the examples of every
// command's --help, colour per FORCE_COLOR / NO_COLOR / TERM, a journal that does not exist, and
// `ptc resume` / `ptc revert` on a journaled run whose host was killed. Assumes `npm run build`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const work = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-cli-help-')));
const BASE_ENV = { PATH: '/usr/bin:/bin' };

function ptc(args: string[], input = '', env: NodeJS.ProcessEnv = {}) {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const result = spawnSync(BIN, args, { cwd: repoRoot, input, encoding: 'utf8', env: { ...BASE_ENV, ...env }, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `ptc args` on a terminal (util-linux `script` gives it a pty); what the terminal showed. */
function onTerminal(args: string[], env: NodeJS.ProcessEnv = {}): string {
  const command = [BIN, ...args].map((part) => `'${part}'`).join(' ');
  const result = spawnSync('script', ['-qec', command, '/dev/null'], { cwd: repoRoot, encoding: 'utf8', env: { ...BASE_ENV, TERM: 'xterm', ...env }, timeout: 60_000 });
  assert.is(result.status, 0, result.stderr);
  return result.stdout;
}

const USAGE_ERRORS: Array<[string[], string]> = [
  [['run', '--timout-ms', '500', '-'], 'ptc: unknown option --timout-ms (did you mean --timeout-ms?)\n'],
  [['run', '--timoutMs', '500', '-'], 'ptc: unknown option --timoutMs (did you mean --timeout-ms?)\n'],
  [['run', '--no-jsn', '-'], 'ptc: unknown option --no-jsn (did you mean --no-json?)\n'],
  [['run', '--bogus', '-'], 'ptc: unknown option --bogus (ptc run --help lists the options)\n'],
  [['repl', '--bindngs', 'x.mjs'], 'ptc: unknown option --bindngs (did you mean --bindings?)\n'],
  [['runs', '--jurnal', 'x.db'], 'ptc: unknown option --jurnal (did you mean --journal?)\n'],
  [['rn', 'x.ts'], 'ptc: unknown command "rn" (did you mean "run"?)\n'],
  [['rnus'], 'ptc: unknown command "rnus" (did you mean "runs"?)\n'],
  [['frobnicate'], 'ptc: unknown command "frobnicate" (commands: run, repl, mcp, serve, runs, resume, revert, resident, version, bootstrap)\n'],
  [['run', 'a.ts', 'b.ts'], 'ptc: unexpected argument "b.ts" (ptc run --help says what it takes)\n'],
];

for (const [args, expected] of USAGE_ERRORS) {
  test(`ptc ${args.join(' ')}: one line naming it once, exit code 2`, () => {
    const result = ptc(args, 'return 1');
    assert.equal(result, { code: 2, stdout: '', stderr: expected });
  });
}

const EXAMPLES: Array<[string[], string[]]> = [
  [[], ['ptc run triage.ts --bindings tools.mjs', "echo 'return 1 + 1' | ptc run -", 'ptc repl', 'ptc run --help']],
  [['run'], ['ptc run triage.ts --bindings tools.mjs', "echo 'return 1 + 1' | ptc run -", 'ptc run job.ts --json', 'ptc run job.ts --allow-network']],
  [['repl'], ['ptc repl --bindings tools.mjs', "printf 'let a = 1\\na + 1\\n' | ptc repl"]],
  [['serve'], ['ptc serve --sandbox read-only']],
  [['mcp'], ['ptc mcp --config servers.json']],
  [['runs'], ['ptc runs --journal runs.db', 'ptc runs --journal runs.db <runId> --json']],
  [['resume'], ['ptc runs --journal runs.db', 'ptc resume <runId> --journal runs.db --bindings tools.mjs']],
  [['revert'], ['ptc revert <runId> --journal runs.db --bindings tools.mjs']],
];

for (const [command, examples] of EXAMPLES) {
  test(`ptc ${[...command, '--help'].join(' ')} ends with its examples`, () => {
    const help = ptc([...command, '--help']);
    assert.is(help.code, 0, help.stderr);
    const section = help.stdout.slice(help.stdout.indexOf('\nExamples:\n'));
    assert.ok(section.length > 1, help.stdout);
    // yargs wraps a long example over two lines of its left column: join the column back up.
    const commands = section.split('\n').slice(2).filter((line) => line.trim() !== '').map((line) => line.slice(2).split(/ {2,}/)[0]!);
    for (const example of examples) {
      assert.ok(commands.join(' ').includes(example), `${example} not in:\n${section}`);
    }
  });
}

test("the top-level example 'echo ... | ptc run -' does what its line says", () => {
  assert.equal(ptc(['run', '-'], 'return 1 + 1'), { code: 0, stdout: '2\n', stderr: '' });
});

const VALUE = "return { n: 1, s: 'x' }";
const PLAIN = "{ n: 1, s: 'x' }\n";
const COLOURED = "{ n: \u001b[33m1\u001b[39m, s: \u001b[32m'x'\u001b[39m }\n";

test('ptc run into a pipe: no colour, unless FORCE_COLOR is empty, 1, 2, 3 or true', () => {
  assert.is(ptc(['run', '-'], VALUE).stdout, PLAIN);
  for (const force of ['', '1', '2', '3', 'true']) assert.is(ptc(['run', '-'], VALUE, { FORCE_COLOR: force }).stdout, COLOURED, `FORCE_COLOR=${force}`);
  for (const force of ['0', 'false']) assert.is(ptc(['run', '-'], VALUE, { FORCE_COLOR: force }).stdout, PLAIN, `FORCE_COLOR=${force}`);
  // FORCE_COLOR decides before NO_COLOR, as in Node.
  assert.is(ptc(['run', '-'], VALUE, { FORCE_COLOR: '1', NO_COLOR: '1' }).stdout, COLOURED);
});

test('ptc run on a terminal: colour, but none with NO_COLOR set non-empty, TERM=dumb or FORCE_COLOR=0', () => {
  const program = join(work, 'value.ts');
  writeFileSync(program, VALUE);
  const crlf = (text: string): string => text.replace(/\n/g, '\r\n');
  // On a terminal a coloured value ends with a reset (terminal-text.ts), so a colour it left open stops there.
  const terminalColoured = COLOURED.replace(/\n$/, '\u001b[0m\n');
  assert.is(onTerminal(['run', program]), crlf(terminalColoured));
  assert.is(onTerminal(['run', program], { NO_COLOR: '' }), crlf(terminalColoured));
  assert.is(onTerminal(['run', program], { NO_COLOR: '1' }), crlf(PLAIN));
  assert.is(onTerminal(['run', program], { TERM: 'dumb' }), crlf(PLAIN));
  assert.is(onTerminal(['run', program], { FORCE_COLOR: '0' }), crlf(PLAIN));
});

test('ptc repl with piped input prints values in colour with FORCE_COLOR=1, plain without', () => {
  const input = '({ n: 1 })\n';
  assert.is(ptc(['repl'], input).stdout, '{ n: 1 }\n');
  assert.is(ptc(['repl'], input, { FORCE_COLOR: '1' }).stdout, '{ n: \u001b[33m1\u001b[39m }\n');
});

test('ptc runs, resume and revert refuse a journal that does not exist, and do not create it', () => {
  const missing = join(work, 'typo.db');
  for (const args of [['runs'], ['runs', 'some-run'], ['resume', 'some-run'], ['revert', 'some-run']]) {
    const result = ptc([...args, '--journal', missing]);
    assert.equal(result, { code: 2, stdout: '', stderr: `ptc: --journal ${JSON.stringify(missing)}: no such file (a journal is made by a run with config.journal)\n` }, args.join(' '));
    assert.not.ok(existsSync(missing));
  }
  const directory = ptc(['runs', '--journal', work]);
  assert.equal(directory, { code: 2, stdout: '', stderr: `ptc: --journal ${JSON.stringify(work)}: not a file\n` });
});

test('a run whose ptc was killed mid-run: ptc runs lists it running, ptc resume finishes it without repeating the answered call, ptc revert rolls it back', () => {
  const journal = join(work, 'runs.db');
  const calls = join(work, 'calls.log');
  const killedOnce = join(work, 'killed-once');
  const tools = join(work, 'tools.mjs');
  // `charge` kills its own ptc the first time: the run stays `running` in the journal with call 1 answered.
  writeFileSync(tools, [
    `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';`,
    `import { binding } from ${JSON.stringify(join(repoRoot, 'host/index.ts'))};`,
    `const log = (line) => appendFileSync(${JSON.stringify(calls)}, line + '\\n');`,
    `export const reserve = binding(async (n) => { log('reserve ' + n); return 'seat-' + n; }, { revert: async (seat) => log('release ' + seat) });`,
    `export async function charge(seat) {`,
    `  if (!existsSync(${JSON.stringify(killedOnce)})) { writeFileSync(${JSON.stringify(killedOnce)}, ''); process.kill(process.pid, 'SIGKILL'); }`,
    `  log('charge ' + seat); return 'paid ' + seat;`,
    `}`,
  ].join('\n'));
  const config = join(work, 'journal.json');
  writeFileSync(config, JSON.stringify({ journal }));
  const program = "const seat = await reserve(7); inspect('reserved', seat); return await charge(seat)";
  const killed = ptc(['run', '--config', config, '--bindings', tools, '-'], program);
  assert.is(killed.code, null, killed.stderr);
  assert.is(readFileSync(calls, 'utf8'), 'reserve 7\n');

  const listed = JSON.parse(ptc(['runs', '--journal', journal, '--json']).stdout) as Array<{ runId: string; status: string }>;
  assert.equal(listed.map((run) => run.status), ['running']);
  const runId = listed[0]!.runId;

  const resumed = ptc(['resume', runId, '--journal', journal, '--bindings', tools]);
  assert.equal(resumed, { code: 0, stdout: "reserved seat-7\n'paid seat-7'\n", stderr: '' });
  assert.is(readFileSync(calls, 'utf8'), 'reserve 7\ncharge seat-7\n');
  assert.is(ptc(['runs', '--journal', journal, runId]).stdout, '#1  reserve(7)  done  → "seat-7"\n#2  charge("seat-7")  done  → "paid seat-7"  [attempt 2]\n');
  const again = ptc(['resume', runId, '--journal', journal, '--bindings', tools]);
  assert.equal(again, { code: 2, stdout: '', stderr: `ptc: resume(): run ${JSON.stringify(runId)} has finished (ok); only a run that never finished can be resumed\n` });

  const reverted = ptc(['revert', runId, '--journal', journal, '--bindings', tools]);
  assert.equal(reverted, { code: 0, stdout: '#2  charge  not reverted: the binding has no revert\n#1  reserve  reverted\n', stderr: '' });
  assert.is(readFileSync(calls, 'utf8'), 'reserve 7\ncharge seat-7\nrelease seat-7\n');
  const json = ptc(['revert', runId, '--journal', journal, '--bindings', tools, '--json']);
  assert.equal(JSON.parse(json.stdout), [{ sequence: 2, binding: 'charge', reverted: false, reason: 'the binding has no revert' }]);
  const unknown = ptc(['revert', 'nope', '--journal', journal]);
  assert.equal(unknown, { code: 2, stdout: '', stderr: 'ptc: revert(): the journal has no run "nope"\n' });
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
