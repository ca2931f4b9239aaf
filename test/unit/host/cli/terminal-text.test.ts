// The terminal neutraliser (host/cli/terminal-text.ts): every control character a terminal obeys is
// shown visibly, newline and tab pass, CR only before a newline, inspect()'s colours only when
// asked, and a stream split anywhere shows what the whole text would.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { inspect } from 'node:util';
import { showControls, TerminalText } from '../../../../host/cli/terminal-text.ts';

const shown = (text: string, keepColors = false): string => showControls(text, { keepColors }).text;

// Every C0 control but newline and tab, in caret notation (the letter is the code plus 0x40).
for (let code = 0; code < 0x20; code++) {
  if (code === 0x0a || code === 0x09) continue;
  const caret = `^${String.fromCharCode(code + 0x40)}`;
  test(`C0 0x${code.toString(16).padStart(2, '0')} is shown as ${caret}`, () => {
    assert.is(shown(`a${String.fromCharCode(code)}b`), `a${caret}b`);
  });
}

test('newline and tab pass; DEL is ^?', () => {
  assert.is(shown('a\tb\nc'), 'a\tb\nc');
  assert.is(shown('a\x7fb'), 'a^?b');
});

// U+0080..U+009F, which a terminal may obey as ESC plus a letter (U+009B is CSI), as cat -v spells the byte.
for (let code = 0x80; code <= 0x9f; code++) {
  const spelled = `M-^${String.fromCharCode(code - 0x40)}`;
  test(`C1 U+00${code.toString(16).toUpperCase()} is shown as ${spelled}`, () => {
    assert.is(shown(`a${String.fromCharCode(code)}b`), `a${spelled}b`);
    // The same control as its UTF-8 bytes, decoded as the host decodes a program's output.
    assert.is(shown(Buffer.from([0x61, 0xc2, code, 0x62]).toString('utf8')), `a${spelled}b`);
  });
}

test('a raw C1 byte (not UTF-8) arrives as U+FFFD, which a terminal shows as a character', () => {
  const decoded = Buffer.from([0x61, 0x9b, 0x32, 0x4b]).toString('utf8');
  assert.is(shown(decoded), 'a\ufffd2K');
});

const SEQUENCES: [string, string, string][] = [
  ['OSC 52 (set the clipboard), BEL-ended', '\x1b]52;c;aGVsbG8=\x07', '^[]52;c;aGVsbG8=^G'],
  ['OSC 2 (window title), ST-ended', '\x1b]2;pwned\x1b\\', '^[]2;pwned^[\\'],
  ['OSC 0 (icon and title)', '\x1b]0;x\x07', '^[]0;x^G'],
  ['CSI erase line and CR', '\x1b[2K\rok\n', '^[[2K^Mok\n'],
  ['CSI cursor up', '\x1b[1A', '^[[1A'],
  ['8-bit CSI', '\x9b2J', 'M-^[2J'],
  ['DCS', '\x1bPq#0;2;0;0;0\x1b\\', '^[Pq#0;2;0;0;0^[\\'],
  ['8-bit OSC and ST', '\x9d2;t\x9c', 'M-^]2;tM-^\\'],
  ['a lone ESC', 'a\x1b', 'a^['],
  ['backspace over text', 'failed\b\b\b\b\b\bok    ', 'failed^H^H^H^H^H^Hok    '],
  ['CRLF line ends pass', 'one\r\ntwo\r\n', 'one\r\ntwo\r\n'],
  ['a CR that would overwrite', 'ptc: program failed\rok', 'ptc: program failed^Mok'],
  ['a CR at the very end', 'x\r', 'x^M'],
  ['SGR colours are not kept by default', '\x1b[32mgreen\x1b[39m', '^[[32mgreen^[[39m'],
];

for (const [name, input, expected] of SEQUENCES) {
  test(`${name}: ${JSON.stringify(input)} is shown as ${JSON.stringify(expected)}`, () => {
    assert.is(shown(input), expected);
    // No control character a terminal obeys is left, but newline, tab and a CR before a newline.
    assert.not.match(shown(input).replace(/\r\n/g, '\n'), /[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });
}

test('keepColors keeps exactly inspect()\'s own colours and resets after them', () => {
  const value = inspect({ a: 'x', n: 1, u: undefined, d: null, r: /x/ }, { colors: true });
  assert.is(showControls(value, { keepColors: true }).text, `${value}\x1b[0m`);
  assert.is(showControls('plain', { keepColors: true }).text, 'plain');
});

test('keepColors still shows every other sequence: conceal, reverse, background, cursor moves, OSC', () => {
  for (const [input, expected] of [
    ['\x1b[8mhidden', '^[[8mhidden'],
    ['\x1b[7m', '^[[7m'],
    ['\x1b[41m', '^[[41m'],
    ['\x1b[32;8m', '^[[32;8m'],
    ['\x1b[1A\x1b[2K', '^[[1A^[[2K'],
    ['\x1b]52;c;eA==\x07', '^[]52;c;eA==^G'],
    ['\x1b[0m', '^[[0m'],
  ]) {
    assert.is(showControls(input!, { keepColors: true }).text, expected, JSON.stringify(input));
  }
});

/** What a stream of chunks shows, written through TerminalText as the CLI writes output entries. */
function streamed(chunks: string[]): string {
  const terminal = new TerminalText(false);
  return chunks.map((chunk) => terminal.chunk(chunk)).join('') + terminal.flush();
}

test('a sequence split across two chunks is as visible as a whole one', () => {
  const whole = '\x1b]52;c;aGVsbG8=\x07\x1b[2K\rok\n';
  for (let cut = 0; cut <= whole.length; cut++) {
    assert.is(streamed([whole.slice(0, cut), whole.slice(cut)]), shown(whole), `cut at ${cut}`);
  }
});

test('a CR at a chunk\'s end waits for the next chunk: CRLF split passes, CR then text shows', () => {
  assert.is(streamed(['one\r', '\ntwo']), 'one\r\ntwo');
  assert.is(streamed(['failed\r', 'ok\n']), 'failed^Mok\n');
  assert.is(streamed(['x\r']), 'x^M');
  assert.is(streamed(['\r', '\r', '\n']), '^M\r\n');
});

test('exact mode (a pipe, a file, --json) passes every byte', () => {
  const bytes = '\x1b]52;c;aGVsbG8=\x07\x1b[2K\rok\x9b\x7f\n';
  const exact = new TerminalText(true);
  assert.is(exact.chunk(bytes) + exact.flush(), bytes);
  assert.is(exact.whole(bytes), bytes);
});

test.run();
