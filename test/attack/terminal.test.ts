// Issue 32, "the terminal": a program's text must not drive the terminal `ptc run` or `ptc repl`
// writes to. The attack sets the clipboard (OSC 52) and the window title (OSC 2), moves the cursor
// up, erases lines and returns the carriage, to overwrite ptc's failure line with a fake "ok".
// Each vector (console.log, process.stdout.write, inspect of a string, the thrown error's message,
// the returned value, and in the REPL a value's custom inspect) runs through the built binary in
// a real pseudo-terminal that tmux emulates, as root and as an unprivileged user; the pane's screen,
// title and paste buffers are what is asserted. A control first writes the same bytes with `cat`
// to show the terminal obeys them. Piped and with --json, the bytes pass exactly.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync, chownSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { asUser, binaryFor, ownedDirectory, removeReachableBinary, runAs, userEnv, victims, type TestUser } from '../helpers/users.ts';

const TMUX = '/usr/bin/tmux';
const ESC = '\x1b';
const CLIPBOARD = `${ESC}]52;c;${Buffer.from('rm -rf ~').toString('base64')}\x07`;

/** The program: every vector `ptc run` shows, ending in a thrown error whose message tries to erase ptc's failure line. */
const PROGRAM = `const E = String.fromCharCode(27);
console.log(E + ']52;c;' + btoa('rm -rf ~') + '\\x07' + 'after-clipboard');
process.stdout.write(E + ']2;pwned-title\\x07' + 'line one\\n');
process.stdout.write(E + '[1A' + E + '[2K\\r' + 'fake-up\\n');
inspect(E + '[2K\\r' + 'inspected ok');
throw new Error(E + '[2K\\r' + E + '[1A' + 'all good: ok');
`;
/** The bytes PROGRAM writes on stdout, for the control and the exactness checks. */
const OUTPUT = `${CLIPBOARD}after-clipboard\n${ESC}]2;pwned-title\x07line one\n${ESC}[1A${ESC}[2K\rfake-up\n${ESC}[2K\rinspected ok\n`;

/** A tmux server of its own whose panes accept OSC 52 (set-clipboard on), so a sequence that gets through leaves a paste buffer. */
class Screen {
  readonly socket = `ptc-terminal-${process.pid}`;

  tmux(...args: string[]): string {
    return execFileSync(TMUX, ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  }

  start(name: string, command: string[], cwd: string): void {
    const line = `${command.map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(' ')}; echo "[exited $?]"`;
    this.tmux('new-session', '-d', '-s', name, '-x', '200', '-y', '50', '-c', cwd, line, ';', 'set-option', '-t', name, 'remain-on-exit', 'on', ';', 'set-option', '-g', 'set-clipboard', 'on');
  }

  type(name: string, text: string): void {
    this.tmux('send-keys', '-t', name, '-l', text);
    this.tmux('send-keys', '-t', name, 'Enter');
  }

  lines(name: string): string[] {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-', '-t', name).split('\n').map((line) => line.trimEnd());
  }

  title(name: string): string {
    return this.tmux('display-message', '-p', '-t', name, '#{pane_title}').trim();
  }

  buffers(): string {
    return spawnSync(TMUX, ['-L', this.socket, 'list-buffers'], { encoding: 'utf8' }).stdout;
  }

  /** Waits until `expected` appear as consecutive lines of the pane. */
  async expect(name: string, expected: string[]): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const lines = this.lines(name);
      if (lines.some((_, start) => expected.every((line, offset) => lines[start + offset] === line))) return;
      if (Date.now() > deadline) assert.unreachable(`timed out waiting for ${JSON.stringify(expected)} in the pane:\n${lines.join('\n')}`);
      await sleep(25);
    }
  }

  kill(): void {
    const path = spawnSync(TMUX, ['-L', this.socket, 'display-message', '-p', '#{socket_path}'], { encoding: 'utf8' }).stdout.trim();
    spawnSync(TMUX, ['-L', this.socket, 'kill-server']);
    if (path !== '') rmSync(path, { force: true });
  }
}

/** A command as `user`, with that user's plain environment (tmux's server passes its own otherwise). */
function commandAs(user: TestUser, command: string[]): string[] {
  return asUser(user, ['env', '-i', ...Object.entries(userEnv(user)).map(([key, value]) => `${key}=${value}`), ...command]);
}

function workspace(user: TestUser): { path: string; program: string; remove(): void } {
  const ws = ownedDirectory(user, 'ptc-terminal-');
  const program = join(ws.path, 'evil.ts');
  writeFileSync(program, PROGRAM);
  if (user.uid !== process.getuid?.()) chownSync(program, user.uid, user.gid);
  return { ...ws, program };
}

test.after(() => removeReachableBinary());

test('control: the same bytes written by cat set the title, fill a paste buffer and overwrite a line on this terminal', async () => {
  assert.ok(existsSync(TMUX), `${TMUX} is missing: .ci/run installs tmux`);
  const screen = new Screen();
  const ws = workspace(victims()[0]!);
  try {
    const raw = join(ws.path, 'raw');
    writeFileSync(raw, OUTPUT);
    screen.start('C', ['cat', raw], ws.path);
    await screen.expect('C', ['after-clipboard', 'fake-up', 'inspected ok', '[exited 0]']);
    assert.is(screen.title('C'), 'pwned-title');
    assert.match(screen.buffers(), /rm -rf ~/);
    assert.not.ok(screen.lines('C').includes('line one'), 'the cursor went up and the line was erased');
  } finally {
    screen.kill();
    ws.remove();
  }
});

for (const user of victims()) {
  test(`as ${user.name}, ptc run on a terminal: every control character shows, ptc's failure line stays, no title or clipboard is set`, async () => {
    const screen = new Screen();
    const ws = workspace(user);
    try {
      screen.start('R', commandAs(user, [binaryFor(user), 'run', ws.program]), ws.path);
      await screen.expect('R', [
        '^[]52;c;cm0gLXJmIH4=^Gafter-clipboard',
        '^[]2;pwned-title^Gline one',
        '^[[1A^[[2K^Mfake-up',
        '^[[2K^Minspected ok',
        'ptc: program failed (exception): ^[[2K^M^[[1Aall good: ok',
        'Error: ^[[2K^M^[[1Aall good: ok',
        `    at ${ws.program}:6:7`,
        '[exited 1]',
      ]);
      assert.is.not(screen.title('R'), 'pwned-title');
      assert.is(screen.buffers(), '');
    } finally {
      screen.kill();
      ws.remove();
    }
  });

  test(`as ${user.name}, ptc run on a terminal: a returned string and its hint-free value show their controls escaped`, async () => {
    const screen = new Screen();
    const ws = workspace(user);
    try {
      writeFileSync(ws.program, `const E = String.fromCharCode(27); return { [E + ']2;key-title\\x07']: E + '[2K\\r' + 'ok', list: [E + '[1A'] };`);
      if (user.uid !== process.getuid?.()) chownSync(ws.program, user.uid, user.gid);
      screen.start('V', commandAs(user, [binaryFor(user), 'run', ws.program]), ws.path);
      await screen.expect('V', ["{ '\\x1B]2;key-title\\x07': '\\x1B[2K\\rok', list: [ '\\x1B[1A' ] }", '[exited 0]']);
      assert.is.not(screen.title('V'), 'key-title');
    } finally {
      screen.kill();
      ws.remove();
    }
  });

  test(`as ${user.name}, ptc repl on a terminal: output, inspect, a failure and a custom-inspected value show their controls`, async () => {
    const screen = new Screen();
    const ws = workspace(user);
    try {
      screen.start('P', commandAs(user, [binaryFor(user), 'repl']), ws.path);
      await screen.expect('P', ['ptc>']);
      screen.type('P', 'const E = String.fromCharCode(27)');
      await screen.expect('P', ['ptc> const E = String.fromCharCode(27)', 'ptc>']);
      screen.type('P', 'process.stdout.write(E + "]2;repl-title\\x07" + "one\\n" + E + "[1A" + E + "[2K\\rtwo\\r")');
      await screen.expect('P', ['^[]2;repl-title^Gone', '^[[1A^[[2K^Mtwo^M', 'true', 'ptc>']);
      screen.type('P', 'inspect(E + "]52;c;" + btoa("rm -rf ~") + "\\x07copied")');
      await screen.expect('P', ['^[]52;c;cm0gLXJmIH4=^Gcopied', 'ptc>']);
      screen.type('P', 'throw new Error(E + "[2K\\rfine")');
      await screen.expect('P', ['Uncaught Error: ^[[2K^Mfine']);
      screen.type('P', '({ [Symbol.for("nodejs.util.inspect.custom")]() { return E + "]2;custom-title\\x07" + E + "[8m" + "hidden" + E + "[2K\\rcustom ok" } })');
      await screen.expect('P', ['^[]2;custom-title^G^[[8mhidden^[[2K^Mcustom ok', 'ptc>']);
      // inspect()'s own colours still reach the terminal: the number is not shown as text.
      screen.type('P', '[1, "s"]');
      await screen.expect('P', ["[ 1, 's' ]", 'ptc>']);
      screen.type('P', '.exit');
      await screen.expect('P', ['[exited 0]']);
      assert.not.ok(['repl-title', 'custom-title'].includes(screen.title('P')), screen.title('P'));
      assert.is(screen.buffers(), '');
    } finally {
      screen.kill();
      ws.remove();
    }
  });

  test(`as ${user.name}, piped and with --json the program's bytes pass exactly`, async () => {
    const ws = workspace(user);
    try {
      const piped = await runAs(user, [binaryFor(user), 'run', ws.program], { cwd: ws.path });
      assert.is(piped.code, 1, piped.stderr);
      assert.is(piped.stdout, OUTPUT);
      assert.ok(piped.stderr.startsWith(`ptc: program failed (exception): ${ESC}[2K\r${ESC}[1Aall good: ok\n`), JSON.stringify(piped.stderr));
      const json = await runAs(user, [binaryFor(user), 'run', '--json', ws.program], { cwd: ws.path });
      const result = JSON.parse(json.stdout) as { failure: { message: string }; output: Array<{ text: string }> };
      assert.is(result.output.map((entry) => entry.text).join(''), OUTPUT);
      assert.is(result.failure.message, `${ESC}[2K\r${ESC}[1Aall good: ok`);
      const repl = await runAs(user, [binaryFor(user), 'repl'], { cwd: ws.path, input: 'const E = String.fromCharCode(27)\nprocess.stdout.write(E + "]2;t\\x07" + "x\\r\\n")\n' });
      assert.is(repl.stdout, `${ESC}]2;t\x07x\r\ntrue\n`);
    } finally {
      ws.remove();
    }
  });
}

test.run();
