// `ptc repl` end to end: scripted through a stdin pipe, and interactively in a pseudo-terminal
// that tmux drives (keys in, the pane's text out), from source and through the built binary.
// Also the session's two pure parts: when input is incomplete, and how a failure reads.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { describeFailure } from '../../host/cli/repl.ts';
import { asObjectLiteral, isIncomplete } from '../../host/cli/repl-input.ts';
import type { Failure } from '../../host/index.ts';
import { repoRoot } from '../helpers/runtime.ts';

const SOURCE = [process.execPath, join(repoRoot, 'host', 'cli', 'bin.ts')];
const BIN = join(repoRoot, 'dist', 'ptc');
const TMUX = '/usr/bin/tmux';
const work = mkdtempSync(join(tmpdir(), 'ptc-repl-'));
const GO = join(work, 'go');
// A short stop grace: an interrupt the carrier cannot acknowledge ends in a kill sooner.
const GRACE = join(work, 'grace.json');
writeFileSync(GRACE, JSON.stringify({ stopGraceMs: 300 }));
// gate() waits for the test to create GO; hang() never settles, so only an interrupt ends it.
const TOOLS = join(work, 'tools.mjs');
writeFileSync(TOOLS, `import { existsSync } from 'node:fs';
export async function gate() { while (!existsSync(${JSON.stringify(GO)})) await new Promise((resolve) => setTimeout(resolve, 20)); }
export function hang() { return new Promise(() => {}); }
`);

function script(input: string, args: string[] = [], command: string[] = SOURCE) {
  const [executable, ...rest] = command;
  const result = spawnSync(executable!, [...rest, 'repl', ...args], { cwd: repoRoot, input, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Defines one test per front-end build: from source, and dist/ptc when it is built. */
function both(name: string, body: (command: string[]) => void): void {
  test(`${name} (source)`, () => body(SOURCE));
  if (existsSync(BIN)) test(`${name} (dist/ptc)`, () => body([BIN]));
}

const INCOMPLETE: [string, boolean][] = [
  ['let a = 1', false],
  ['await Promise.resolve(1)', false],
  ['function f() {', true],
  ['let o = {\n  a: 1,', true],
  ['a +', true],
  ['if (ready)', true],
  ['call(1,', true],
  ['`first line', true],
  ['`${open', true],
  ["'no closing quote", false],
  ["'continued \\", true],
  ['/* a comment', true],
  ['}', false],
  ['let 1', false],
  ['let x: number = 1', false],
  ['function typed(n: number): number {', true],
  ['let shape: {', true],
  ['const s: string = `open', true],
  ['let x: = 1', false],
];

for (const [source, expected] of INCOMPLETE) {
  test(`isIncomplete(${JSON.stringify(source)}) is ${expected}`, () => {
    // The session checks the buffer with the newline the user typed.
    assert.is(isIncomplete(`${source}\n`), expected);
  });
}

const FAILURES: [string, Failure, string[]][] = [
  ['an interrupt the carrier acknowledged', { kind: 'abort', message: 'execution aborted: interrupted', state: 'preserved' }, ['interrupted (variables kept)']],
  ['an interrupt that cost the environment', { kind: 'abort', message: 'execution aborted: interrupted', state: 'cleared' }, ['interrupted (environment reset)']],
  [
    'a timeout that cost the environment',
    { kind: 'timeout', message: 'execution timed out during execution (deadline 300 ms elapsed)', timeoutMs: 300, state: 'cleared' },
    ['timeout: execution timed out during execution (deadline 300 ms elapsed)', 'the environment was reset; earlier variables are gone'],
  ],
  [
    'an exception with a stack',
    { kind: 'exception', name: 'TypeError', message: 'bad', stack: 'TypeError: bad\n    at /w/repl-1.ts:1:7', state: 'preserved' },
    ['Uncaught TypeError: bad\n    at /w/repl-1.ts:1:7'],
  ],
  [
    'a syntax error with its excerpt',
    { kind: 'exception', name: 'SyntaxError', message: 'Unexpected number', stack: '/w/repl-2.ts:1\nlet 1\n    ^\n\nSyntaxError: Unexpected number' },
    ['/w/repl-2.ts:1\nlet 1\n    ^\n\nUncaught SyntaxError: Unexpected number'],
  ],
  [
    'a binding error',
    { kind: 'exception', name: 'BindingError', message: 'no such issue', stack: 'BindingError: no such issue\n    at /w/repl-3.ts:1:1', binding: 'tracker.get', code: 'ENOENT' },
    ['Uncaught BindingError: no such issue\n    at /w/repl-3.ts:1:1', 'binding: tracker.get (code ENOENT)'],
  ],
  ['an exception without a stack', { kind: 'exception', name: 'Error', message: 'thrown' }, ['Uncaught Error: thrown']],
  [
    'a lossy value',
    { kind: 'invalid-output', message: 'the completion value is not lossless JSON', path: 'value', state: 'preserved' },
    ['invalid-output: the completion value is not lossless JSON', 'path: value'],
  ],
];

for (const [what, failure, expected] of FAILURES) {
  test(`describeFailure: ${what}`, () => {
    assert.equal(describeFailure(failure), expected);
  });
}

test('piped: each line is a submission and the value is printed', () => {
  assert.equal(script('let a = 1\na + 1\n'), { code: 0, stdout: '2\n', stderr: '' });
});

test('piped: declarations persist, definitions span lines, and an exception does not end the session', () => {
  const input = [
    'let a = 1',
    'function add(x: number, y: number): number {',
    '  return x + y',
    '}',
    'add(a, 2)',
    "inspect('sum', add(a, a)); a = 10",
    "throw new RangeError('too far')",
    'a',
    '',
  ].join('\n');
  const { code, stdout, stderr } = script(input);
  assert.is(stderr, '');
  assert.is(code, 1, 'a piped session with a failed submission exits 1');
  assert.is(stdout, `3\nsum 2\n10\nUncaught RangeError: too far\n    at ${join(repoRoot, 'repl-5.ts')}:1:7\n10\n`);
});

for (const args of [[], ['--repl-node'], ['--mode', 'vm-script']]) {
  test(`piped: state persists with ${args.length === 0 ? 'the default scoped REPL' : args.join(' ')}`, () => {
    const { code, stdout } = script('let a = 1\nconst b = a + 1\nb * 10\n', args);
    assert.is(code, 0);
    assert.is(stdout, '20\n');
  });
}

test('piped: an empty line submits unfinished input, and input that ends unfinished is submitted too', () => {
  const { code, stdout } = script('[1,\n\n"after"\nfunction f() {\n');
  assert.is(code, 1);
  assert.match(stdout, /^[^]*Uncaught SyntaxError: [^]*\n'after'\n[^]*Uncaught SyntaxError: [^\n]+\n$/);
});

test('piped: commands, images and a deadline that interrupts a loop and keeps the environment', () => {
  const input = [
    '.help',
    '.nope',
    'let kept = 1',
    "inspect(await Image.fromFile('test/fixtures/images/rgb-300x7.png'))",
    'while (true) {}',
    'typeof kept',
    '.exit',
    'inspect("never runs")',
    '',
  ].join('\n');
  const { code, stdout } = script(input, ['--config', GRACE, '--timeout-ms', '500']);
  assert.is(code, 1);
  assert.match(stdout, /^\.break +discard the input[^]*\n\.exit +leave the session/);
  assert.match(stdout, /\nunknown command \.nope; \.help lists the commands\n/);
  assert.match(stdout, /\n\[image img-1 \d+x\d+ \S+rgb-300x7\.png\]\n/);
  assert.not.match(stdout, /never runs/);
  assert.match(stdout, /\ntimeout: execution timed out during execution \(deadline 500 ms elapsed\)\n'number'\n$/);
});

test('piped: an environment lost while idle is reported by the next submission', async () => {
  const [node, bin] = SOURCE;
  const child = spawn(node!, [bin!, 'repl'], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stdin.write('globalThis.kept = 1; setTimeout(() => process.exit(7), 200); inspect("armed")\n');
  await until(() => stdout === 'armed\n', 'the first submission');
  // The carrier is the session's only child process; it is gone once the host has reaped it.
  await until(() => children(child.pid!).length === 0, 'the carrier to exit while idle');
  child.stdin.end('typeof kept\n');
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.is(code, 0);
  assert.match(stdout, /^armed\n\(the previous environment was lost: its process exited with code 7 while idle[^\n]*; this is a new environment and earlier variables are gone\)\n'undefined'\n$/);
});

test('piped: the confinement flags reach the runtime', () => {
  const { code, stdout } = script('await import("node:fs").then((fs) => fs.writeFileSync("written.txt", "x"))\n', ['--sandbox', 'read-only', '--cwd', work]);
  assert.is(code, 1);
  assert.match(stdout, /^Uncaught Error: .*(EROFS|ERR_ACCESS_DENIED|EACCES)/);
  assert.not.ok(existsSync(join(work, 'written.txt')));
});

test('usage errors exit 2 and name the problem', () => {
  const mixed = script('', ['--repl-node', '--mode', 'vm-script']);
  assert.is(mixed.code, 2);
  assert.match(mixed.stderr, /--repl-node needs --mode persistent-in-memory, got --mode vm-script/);
  const missing = script('', ['--bindings', join(work, 'missing.mjs')]);
  assert.is(missing.code, 2);
  assert.match(missing.stderr, /cannot load --bindings/);
  const limit = script('', ['--max-pending-calls', '0']);
  assert.is(limit.code, 2);
  assert.match(limit.stderr, /maxPendingCalls must be a positive integer, got 0/);
});

both('piped: input in braces is an object when it parses as one, in every REPL format', (command) => {
  const input = '{ a: 1, b: [2] as number[] }\n{ let x = 1; x }\n{}\n';
  assert.equal(script(input, [], command), { code: 0, stdout: '{ a: 1, b: [ 2 ] }\n{}\n', stderr: '' });
  // Node's REPL and Scripts complete a block with its last expression.
  for (const args of [['--repl-node'], ['--mode', 'vm-script']]) {
    assert.equal(script(input, args, command), { code: 0, stdout: '{ a: 1, b: [ 2 ] }\n1\n{}\n', stderr: '' }, args.join(' '));
  }
});

both('piped: values JSON cannot hold are shown as Node\'s REPL shows them', (command) => {
  const input = 'new Map([[1, { a: [1, 2] }]])\nnew Date(0)\nnew Set(["x"])\n';
  const expected = "Map(1) { 1 => { a: [ 1, 2 ] } }\n1970-01-01T00:00:00.000Z\nSet(1) { 'x' }\n";
  assert.equal(script(input, [], command), { code: 0, stdout: expected, stderr: '' });
  assert.equal(script(input, ['--repl-node'], command), { code: 0, stdout: expected, stderr: '' });
  // The scoped REPL does not await its completion; Node's REPL would also list its async-hook symbols.
  assert.equal(script('Promise.resolve(5)\n', [], command), { code: 0, stdout: 'Promise { 5 }\n', stderr: '' });
});

both('piped: in sloppy code `typeof await` reads a variable named await', (command) => {
  for (const args of [['--repl-node'], ['--mode', 'vm-script']]) {
    const input = 'typeof await\nlet n: number = await Promise.resolve(2)\nn\n';
    assert.equal(script(input, args, command), { code: 0, stdout: "'undefined'\n2\n", stderr: '' }, args.join(' '));
  }
});

both('piped: the exit code is 1 after a failed submission, and the session goes on', (command) => {
  assert.equal(script('throw new Error("first")\n1 + 1\n', [], command), {
    code: 1,
    stdout: `Uncaught Error: first\n    at ${join(repoRoot, 'repl-1.ts')}:1:7\n2\n`,
    stderr: '',
  });
  assert.is(script('1 + 1\n', [], command).code, 0);
});

const OBJECT_LITERALS: [string, string | undefined][] = [
  ['{ a: 1, b: [2] }', '({ a: 1, b: [2] })'],
  ['  { a: 1 as number }  ', '(  { a: 1 as number }  )'],
  ['{}', '({})'],
  ['{ let x = 1; x }', undefined],
  ['{ a: 1 }; { b: 2 }', undefined],
  ['{ a: 1 } + 1', undefined],
  ['x = { a: 1 }', undefined],
];

for (const [source, expected] of OBJECT_LITERALS) {
  test(`asObjectLiteral(${JSON.stringify(source)}) is ${JSON.stringify(expected)}`, () => {
    assert.is(asObjectLiteral(source, 'scoped-repl'), expected);
  });
}

test('isIncomplete: `typeof await` is complete in sloppy formats and waits for an operand in the scoped REPL', () => {
  assert.is(isIncomplete('typeof await\n', 'repl'), false);
  assert.is(isIncomplete('typeof await\n', 'vm-script'), false);
  assert.is(isIncomplete('typeof await\n', 'scoped-repl'), true);
});

/** A tmux server of its own, with one pane running the command. */
class Terminal {
  readonly socket = `ptc-test-${process.pid}`;
  /** Per session, where the next match may start: the last line of the previous one. */
  readonly #seen = new Map<string, number>();

  tmux(...args: string[]): string {
    return execFileSync(TMUX, ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  }

  start(name: string, command: string[]): void {
    // The shell reports the exit status on the pane: tmux 3.3 sometimes marks a pane dead (its pty
    // closed) without ever reaping the process, so #{pane_dead_status} cannot be relied on.
    // remain-on-exit keeps the pane, and that line, after the shell ends.
    const line = `${command.map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(' ')}; echo "[exited $?]"`;
    this.tmux('new-session', '-d', '-s', name, '-x', '160', '-y', '50', '-c', repoRoot, line, ';', 'set-option', '-t', name, 'remain-on-exit', 'on');
    this.#seen.set(name, 0);
  }

  type(name: string, text: string): void {
    this.tmux('send-keys', '-t', name, '-l', text);
  }

  keys(name: string, ...keys: string[]): void {
    this.tmux('send-keys', '-t', name, ...keys);
  }

  lines(name: string): string[] {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-', '-t', name).split('\n').map((line) => line.trimEnd());
  }

  /** Waits until these consecutive lines appear below the previous match; returns where they start. */
  async expect(name: string, expected: string[]): Promise<number> {
    const at = await until(() => {
      const lines = this.lines(name);
      for (let start = this.#seen.get(name) ?? 0; start + expected.length <= lines.length; start++) {
        if (expected.every((line, offset) => lines[start + offset] === line)) return start;
      }
      return undefined;
    }, `${JSON.stringify(expected)} in the pane`, () => this.lines(name).join('\n'));
    // The last line can take part in the next match: it is usually the prompt the next input goes on.
    this.#seen.set(name, at + expected.length - 1);
    return at;
  }

  /** The screen from the last line of the previous match. */
  after(name: string): string[] {
    return this.lines(name).slice(this.#seen.get(name) ?? 0);
  }

  /** Waits for the command to end; its exit status as the shell reported it. */
  exitStatus(name: string): Promise<string> {
    return until(() => {
      for (const line of this.after(name)) {
        const status = /^\[exited (\d+)\]$/.exec(line)?.[1];
        if (status !== undefined) return status;
      }
      return undefined;
    }, `${name} to exit`, () => this.lines(name).join('\n'));
  }

  /** Ends the server and removes its socket, which tmux 3.3 leaves behind. */
  kill(): void {
    const path = spawnSync(TMUX, ['-L', this.socket, 'display-message', '-p', '#{socket_path}'], { encoding: 'utf8' }).stdout.trim();
    spawnSync(TMUX, ['-L', this.socket, 'kill-server']);
    if (path !== '') rmSync(path, { force: true });
  }
}

async function until<T>(probe: () => T | undefined | false, what: string, show?: () => string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) assert.unreachable(`timed out waiting for ${what}${show ? `:\n${show()}` : ''}`);
    await sleep(25);
  }
}

function children(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((thread) =>
    readFileSync(`/proc/${pid}/task/${thread}/children`, 'utf8').split(' ').filter((id) => id.trim() !== '').map(Number),
  );
}

async function interactive(command: string[]): Promise<void> {
  assert.ok(existsSync(TMUX), `${TMUX} is missing: .ci/run installs tmux`);
  const term = new Terminal();
  rmSync(GO, { force: true });
  try {
    term.start('S', [...command, 'repl', '--bindings', TOOLS, '--config', GRACE]);
    await term.expect('S', ['ptc>']);
    term.type('S', 'let x = 41');
    term.keys('S', 'Enter');
    await term.expect('S', ['ptc> let x = 41', 'ptc>']);

    // Output is shown while the program still runs.
    term.type('S', 'inspect("ti" + "ck"); await gate(); inspect("to" + "ck")');
    term.keys('S', 'Enter');
    await term.expect('S', ['tick']);
    assert.not.ok(term.after('S').includes('tock'), 'the second line is printed only after the gate opens');
    writeFileSync(GO, '');
    await term.expect('S', ['tock', 'ptc>']);

    term.type('S', 'function twice(n: number) {');
    term.keys('S', 'Enter');
    await term.expect('S', ['ptc> function twice(n: number) {', '...>']);
    term.type('S', '  return n * 2');
    term.keys('S', 'Enter');
    await term.expect('S', ['...>   return n * 2', '...>']);
    term.type('S', '}');
    term.keys('S', 'Enter');
    await term.expect('S', ['...> }', 'ptc>']);
    term.type('S', 'twice(x)');
    term.keys('S', 'Enter');
    await term.expect('S', ['ptc> twice(x)', '82', 'ptc>']);

    // Ctrl-C stops a program waiting on a binding: the pending call rejects, the run settles and
    // the carrier acknowledges the stop, so the variables survive.
    term.type('S', 'inspect("wait" + "ing"); await hang()');
    term.keys('S', 'Enter');
    await term.expect('S', ['waiting']);
    term.keys('S', 'C-c');
    await term.expect('S', ['interrupted (variables kept)', 'ptc>']);
    term.type('S', 'x + 1');
    term.keys('S', 'Enter');
    await term.expect('S', ['ptc> x + 1', '42', 'ptc>']);

    // A program blocked in a system call (here spawnSync waiting for its child) cannot be
    // interrupted; after stopGraceMs the process group is killed, the message says why, and the
    // next submission starts a new environment.
    term.type('S', 'inspect("wait" + "ing"); (await import("node:child_process")).execFileSync("sleep", ["600"])');
    term.keys('S', 'Enter');
    await term.expect('S', ['waiting']);
    term.keys('S', 'C-c');
    await term.expect('S', [
      'interrupted (environment reset)',
      'it did not stop within stopGraceMs (300 ms), so its process was ended: a blocking call (a read that never returns) cannot be interrupted, and under node-permission, on a remote carrier or on a Node before 26 no synchronous code can',
      'ptc>',
    ]);
    term.type('S', 'typeof x');
    term.keys('S', 'Enter');
    await term.expect('S', ['ptc> typeof x', "'undefined'", 'ptc>']);

    // Ctrl-C at the prompt discards the line being typed.
    term.type('S', 'let y = ');
    await term.expect('S', ['ptc> let y =']);
    term.keys('S', 'C-c');
    await term.expect('S', ['ptc>']);
    term.type('S', 'typeof y');
    term.keys('S', 'Enter');
    await term.expect('S', ['ptc> typeof y', "'undefined'", 'ptc>']);

    term.type('S', '.exit');
    term.keys('S', 'Enter');
    assert.is(await term.exitStatus('S'), '0');

    // Ctrl-C twice at an empty prompt leaves, and so does Ctrl-D.
    term.start('T', [...command, 'repl']);
    await term.expect('T', ['ptc>']);
    term.keys('T', 'C-c');
    await term.expect('T', ['(to leave, press Ctrl-C again, press Ctrl-D, or type .exit)', 'ptc>']);
    term.keys('T', 'C-c');
    assert.is(await term.exitStatus('T'), '0');
    term.start('U', [...command, 'repl']);
    await term.expect('U', ['ptc>']);
    term.keys('U', 'C-d');
    assert.is(await term.exitStatus('U'), '0');
  } finally {
    term.kill();
  }
}

/** Tab, `_` and `_error`, Ctrl-C on a synchronous loop, .editor, .save, and history and .load in a second session. */
async function features(command: string[]): Promise<void> {
  const term = new Terminal();
  const history = join(work, `history-${command.length}`);
  const saved = join(work, `saved-${command.length}.ts`);
  rmSync(history, { force: true });
  const withHistory = ['env', `PTC_REPL_HISTORY=${history}`, ...command, 'repl'];
  try {
    term.start('F', withHistory);
    await term.expect('F', ['ptc>']);
    assert.match(term.lines('F')[0]!, /^ptc \d+\.\d+\.\d+ repl · persistent-in-memory \(scoped REPL\) · sandbox \S+, policy workspace-write · \.help for commands$/);
    term.type('F', 'let foo = { alpha: 1, beta: [2] }');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> let foo = { alpha: 1, beta: [2] }', 'ptc>']);

    // Tab completes a retained object's property, asked from the carrier.
    term.type('F', 'foo.al');
    term.keys('F', 'Tab');
    await term.expect('F', ['ptc> foo.alpha']);
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> foo.alpha', '1', 'ptc>']);

    // _ is the last value; assigning it turns the automatic value off, with Node's notice.
    term.type('F', '_ + 1');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> _ + 1', '2', 'ptc>']);
    term.type('F', '.save ' + saved);
    term.keys('F', 'Enter');
    await term.expect('F', [`ptc> .save ${saved}`, `Session saved to: ${saved}`, 'ptc>']);
    assert.is(readFileSync(saved, 'utf8'), 'let foo = { alpha: 1, beta: [2] }\nfoo.alpha\n_ + 1\n');
    term.type('F', 'throw new RangeError("too far")');
    term.keys('F', 'Enter');
    await term.expect('F', ['Uncaught RangeError: too far']);
    term.type('F', '_error.message');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> _error.message', "'too far'", 'ptc>']);
    term.type('F', '_ = 5');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> _ = 5', 'Expression assignment to _ now disabled.', '5', 'ptc>']);
    term.type('F', '10');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> 10', '10', 'ptc>']);
    term.type('F', '_');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> _', '5', 'ptc>']);

    // Ctrl-C interrupts a synchronous loop at once, and every variable survives.
    term.type('F', 'let kept = 7');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> let kept = 7', 'ptc>']);
    term.type('F', 'inspect("spin" + "ning"); while (true) {}');
    term.keys('F', 'Enter');
    await term.expect('F', ['spinning']);
    term.keys('F', 'C-c');
    await term.expect('F', ['interrupted (variables kept)', 'ptc>']);
    term.type('F', 'kept + foo.alpha');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> kept + foo.alpha', '8', 'ptc>']);

    // .editor takes lines as they are; Ctrl-D runs them.
    term.type('F', '.editor');
    term.keys('F', 'Enter');
    await term.expect('F', ['ptc> .editor', '// Entering editor mode (Ctrl+D to finish, Ctrl+C to cancel)']);
    term.type('F', 'const z = kept * 2');
    term.keys('F', 'Enter');
    term.type('F', 'z + 1');
    term.keys('F', 'C-d');
    await term.expect('F', ['const z = kept * 2', 'z + 1', '15', 'ptc>']);

    term.type('F', '.exit');
    term.keys('F', 'Enter');
    assert.is(await term.exitStatus('F'), '0');
    assert.is(statSync(history).mode & 0o777, 0o600);
    assert.match(readFileSync(history, 'utf8'), /^let foo = \{ alpha: 1, beta: \[2\] \}\nfoo\.alpha\n[^]*\nkept \+ foo\.alpha\n\.editor\nconst z = kept \* 2\n\.exit\n$/);

    // A second session: the first one's lines are under the up arrow; .load runs a saved file.
    term.start('G', withHistory);
    await term.expect('G', ['ptc>']);
    term.keys('G', 'Up');
    await term.expect('G', ['ptc> .exit']);
    term.keys('G', 'Up');
    await term.expect('G', ['ptc> const z = kept * 2']);
    term.keys('G', 'Up');
    await term.expect('G', ['ptc> .editor']);
    term.keys('G', 'Up');
    await term.expect('G', ['ptc> kept + foo.alpha']);
    term.keys('G', 'C-u');
    term.type('G', '.load ' + saved);
    term.keys('G', 'Enter');
    await term.expect('G', [`ptc> .load ${saved}`, '1', '2', 'ptc>']);
    term.type('G', 'foo.beta');
    term.keys('G', 'Enter');
    await term.expect('G', ['ptc> foo.beta', '[ 2 ]', 'ptc>']);
    // .clear ends the environment: the next submission starts a new one.
    term.type('G', '.clear');
    term.keys('G', 'Enter');
    await term.expect('G', ['ptc> .clear', 'Clearing context...', 'ptc>']);
    term.type('G', 'typeof foo');
    term.keys('G', 'Enter');
    await term.expect('G', ['ptc> typeof foo', "'undefined'", 'ptc>']);
    term.keys('G', 'C-d');
    assert.is(await term.exitStatus('G'), '0');

    // An empty PTC_REPL_HISTORY keeps no history.
    const before = readFileSync(history, 'utf8');
    term.start('H', ['env', 'PTC_REPL_HISTORY=', ...command, 'repl']);
    await term.expect('H', ['ptc>']);
    term.keys('H', 'Up');
    await term.expect('H', ['ptc>']);
    term.type('H', '1 + 1');
    term.keys('H', 'Enter');
    await term.expect('H', ['ptc> 1 + 1', '2', 'ptc>']);
    term.keys('H', 'C-d');
    assert.is(await term.exitStatus('H'), '0');
    assert.is(readFileSync(history, 'utf8'), before);
  } finally {
    term.kill();
  }
}

test('terminal: Tab, _, Ctrl-C on a loop, .editor, .save, history and .load (source)', () => features(SOURCE));

if (existsSync(BIN)) test('terminal: Tab, _, Ctrl-C on a loop, .editor, .save, history and .load (dist/ptc)', () => features([BIN]));
else test.skip('terminal features through dist/ptc: run "npm run build" first', () => {});

test('terminal: live output, multi-line input, Ctrl-C, .exit (source)', () => interactive(SOURCE));

if (existsSync(BIN)) test('terminal: live output, multi-line input, Ctrl-C, .exit (dist/ptc)', () => interactive([BIN]));
else test.skip('terminal through dist/ptc: run "npm run build" first', () => {});

test.run();
