// How a specifier meets the import policy's rules (wire/import-policy.ts): patterns, the
// builtin spelling without `node:`, and the order deny, map, allow.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decideByRules, importFiles, matchesPattern, type ImportRule } from '../../../wire/import-policy.ts';

const MATCHES: Array<[string, string, boolean]> = [
  ['node:child_process', 'node:child_process', true],
  ['node:child_process', 'child_process', true],
  ['child_process', 'node:child_process', true],
  ['node:*', 'fs', true],
  ['node:*', 'node:fs/promises', true],
  ['node:*', 'lodash', false],
  ['@acme/*', '@acme/tools/sub', true],
  ['@acme/*', '@acme', false],
  ['*marker.mjs', './marker.mjs', true],
  ['left-pad', 'left-pad/index.js', false],
  ['a.b', 'axb', false],
  ['*', 'anything at all', true],
];

for (const [pattern, specifier, expected] of MATCHES) {
  test(`${JSON.stringify(pattern)} ${expected ? 'matches' : 'does not match'} ${JSON.stringify(specifier)}`, () => {
    assert.is(matchesPattern(pattern, specifier), expected);
  });
}

const RULES: ImportRule[] = [
  { match: 'node:*', action: 'allow' },
  { match: 'node:child_process', action: 'deny' },
  { match: 'left-pad', action: 'map', file: '/opt/vendor/left-pad.mjs' },
  { match: 'tools', action: 'map', bindings: '' },
  { match: 'node:child_process', action: 'map', file: '/opt/never.mjs' },
];

test('a deny beats a map and an allow, a map beats an allow, and with allow rules the rest is denied', () => {
  assert.equal(decideByRules(RULES, 'child_process'), { kind: 'deny', rule: 'deny "node:child_process"' });
  assert.equal(decideByRules(RULES, 'left-pad'), { kind: 'map', rule: RULES[2] });
  assert.equal(decideByRules(RULES, 'tools'), { kind: 'map', rule: RULES[3] });
  assert.equal(decideByRules(RULES, 'node:os'), { kind: 'pass' });
  assert.equal(decideByRules(RULES, 'lodash'), { kind: 'deny', rule: 'no allow rule matches' });
});

test('without allow rules, what nothing denies passes', () => {
  assert.equal(decideByRules([{ match: 'node:sqlite', action: 'deny' }], 'lodash'), { kind: 'pass' });
  assert.equal(decideByRules([], 'node:sqlite'), { kind: 'pass' });
});

test('the files a policy makes the carrier read: mapped files and the handler', () => {
  assert.equal(importFiles({ rules: RULES, handler: '/opt/runner/imports.mjs' }), ['/opt/vendor/left-pad.mjs', '/opt/never.mjs', '/opt/runner/imports.mjs']);
  assert.equal(importFiles(undefined), []);
});

test.run();
