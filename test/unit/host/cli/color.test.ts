// color.ts decides colour as Node does for console.log: FORCE_COLOR first, then the terminal,
// NO_COLOR (non-empty), NODE_DISABLE_COLORS and TERM=dumb. A table of stream and environment.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { colorEnabled } from '../../../../host/cli/color.ts';
import { nearest, editDistance } from '../../../../host/cli/did-you-mean.ts';

const tty = { isTTY: true };
const pipe = {};
const CASES: Array<[{ isTTY?: boolean }, NodeJS.ProcessEnv, boolean]> = [
  [tty, {}, true],
  [pipe, {}, false],
  [tty, { TERM: 'xterm-256color' }, true],
  [tty, { TERM: 'dumb' }, false],
  [tty, { NO_COLOR: '1' }, false],
  [tty, { NO_COLOR: '' }, true],
  [tty, { NODE_DISABLE_COLORS: '1' }, false],
  [tty, { FORCE_COLOR: '0' }, false],
  [tty, { FORCE_COLOR: 'false' }, false],
  [pipe, { FORCE_COLOR: '' }, true],
  [pipe, { FORCE_COLOR: '1' }, true],
  [pipe, { FORCE_COLOR: '2' }, true],
  [pipe, { FORCE_COLOR: '3' }, true],
  [pipe, { FORCE_COLOR: 'true' }, true],
  [pipe, { FORCE_COLOR: '1', NO_COLOR: '1', TERM: 'dumb' }, true],
];

for (const [stream, env, expected] of CASES) {
  test(`${stream === tty ? 'terminal' : 'pipe'} ${JSON.stringify(env)}: ${expected ? 'colour' : 'none'}`, () => {
    assert.is(colorEnabled(stream, env), expected);
  });
}

test('did you mean: one edit, a swap, and nothing for a name far from all', () => {
  assert.is(editDistance('timout-ms', 'timeout-ms'), 1);
  assert.is(editDistance('rnu', 'run'), 1);
  assert.is(nearest('rn', ['run', 'repl', 'runs']), 'run');
  assert.is(nearest('jsno', ['json', 'journal']), 'json');
  assert.is(nearest('bogus', ['json', 'journal', 'bindings']), undefined);
  assert.is(nearest('ab', ['cd']), undefined);
});

test.run();
