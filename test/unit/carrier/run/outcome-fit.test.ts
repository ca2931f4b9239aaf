// Fitting a run's outcome into one control message: the JSON-string measure must agree with
// JSON.stringify byte for byte, and a fitted outcome must fit exactly, whatever the text holds.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fitOutcome, REPLY_ENVELOPE } from '../../../../carrier/run/outcome-fit.ts';
import { cutToEscapedBytes as prefixWithin, escapedBytes as encodedLength } from '../../../../wire/limits.ts';
import { encodeJson } from '../../../../wire/json.ts';
import type { RunOutcome } from '../../../../wire/messages.ts';

const TRICKY = ['', 'plain', 'quote " and backslash \\', 'tab\tnew\nline\r\b\f', '\u0001\u001f\u007f', 'é ü ß', '€ 日本', '😀 pair', 'lone \ud800 high', 'lone \udc00 low', '\u2028\u2029', 'end high \ud83d'];

test('encodedLength is the byte length of JSON.stringify, for every kind of code unit', () => {
  for (const text of TRICKY) assert.is(encodedLength(text), Buffer.byteLength(JSON.stringify(text)), JSON.stringify(text));
});

test('prefixWithin keeps the longest prefix that fits and never splits a surrogate pair', () => {
  for (const text of TRICKY) {
    for (let limit = 2; limit <= encodedLength(text) + 1; limit++) {
      const prefix = prefixWithin(text, limit);
      assert.ok(text.startsWith(prefix));
      assert.ok(encodedLength(prefix) <= limit, `${JSON.stringify(text)} at ${limit}`);
      if (prefix.length < text.length) {
        const longer = text.slice(0, prefix.length + (/[\ud800-\udbff]/.test(text[prefix.length]!) && /[\udc00-\udfff]/.test(text[prefix.length + 1] ?? '') ? 2 : 1));
        assert.ok(encodedLength(longer) > limit, `${JSON.stringify(text)} at ${limit}: ${JSON.stringify(longer)} would fit too`);
      }
      assert.not.ok(/[\ud800-\udbff]$/.test(prefix) && /^[\udc00-\udfff]/.test(text.slice(prefix.length)), 'a pair was split');
    }
  }
});

test('fitOutcome: an outcome that fits is untouched', () => {
  const outcome: RunOutcome = { status: 'exception', error: { name: 'Error', message: 'short' } };
  assert.equal(fitOutcome(outcome, 1024), { status: 'exception', error: { name: 'Error', message: 'short' } }, 'not marked as cut either');
});

test('fitOutcome: long fields share the room, short ones stay whole, and the frame fits', () => {
  for (const max of [1024, 4096, 100_000]) {
    const outcome: RunOutcome = {
      status: 'exception',
      error: { name: 'RangeError', message: '"é😀'.repeat(50_000), stack: 'at x\n'.repeat(40_000), code: 'E_CODE', location: { line: 1, column: 2 } },
    };
    const fitted = fitOutcome(outcome, max);
    const bytes = Buffer.byteLength(encodeJson(fitted, 'outcome'));
    assert.ok(bytes <= max - REPLY_ENVELOPE, `${bytes} bytes for ${max}`);
    assert.ok(bytes > max - REPLY_ENVELOPE - 16, `${bytes} bytes for ${max}: room left unused`);
    const error = (fitted as Extract<RunOutcome, { status: 'exception' }>).error;
    assert.equal([error.name, error.code, error.location], ['RangeError', 'E_CODE', { line: 1, column: 2 }]);
    assert.is((fitted as { truncated?: boolean }).truncated, true, 'a cut outcome says so');
    assert.ok(error.message.length > 0 && error.stack!.length > 0);
  }
  const invalid = fitOutcome({ status: 'invalid-output', path: `value.${'k'.repeat(5000)}`, message: `value.${'k'.repeat(5000)} is a Date` }, 1024);
  assert.ok(Buffer.byteLength(encodeJson(invalid, 'outcome')) <= 1024 - REPLY_ENVELOPE);
  assert.is((invalid as { truncated?: boolean }).truncated, true);
});

test.run();
