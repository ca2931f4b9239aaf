// The wire's pieces shared by host and carrier: frame MACs, where a payload travels, and what a
// string costs inside a frame.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { createFrameMac, joinPayload, newChannelKey, PAYLOAD_SEPARATOR, quickFrame, splitPayload } from '../../../wire/frame.ts';
import { encodeJson } from '../../../wire/json.ts';
import { cutToEscapedBytes, escapedBytes } from '../../../wire/limits.ts';

test('a frame MAC is SHA-256 over key, "<seq> " and the bytes, cut to 128 bits, however the bytes arrive', () => {
  const key = newChannelKey();
  assert.match(key, /^[0-9a-f]{64}$/);
  const mac = createFrameMac(key);
  for (const body of ['{"t":"q","m":"output","a":[{"type":"text","text":"é"}]}', `{"t":"q","m":"output","a":[{"type":"text","text":"${'é'.repeat(70_000)}"}]}`]) {
    const expected = createHash('sha256').update(`${key}7 ${body}`).digest('hex').slice(0, 32);
    assert.is(mac.sign(7, body), expected);
    const pieces = mac.begin(7);
    const bytes = Buffer.from(body);
    for (let index = 0; index < bytes.length; index += 5000) pieces.update(bytes.subarray(index, index + 5000));
    assert.is(pieces.end(), expected);
    assert.is.not(mac.sign(8, body), expected, 'the sequence number is covered');
    assert.is.not(createFrameMac(newChannelKey()).sign(7, body), expected, 'the key is covered');
  }
});

const SPLITS: Array<[string, Record<string, unknown>, Record<string, unknown>, string | undefined]> = [
  ['an invoke request', { t: 'q', i: 'c1', m: 'invoke', a: ['tool', '[1,2]'] }, { t: 'q', i: 'c1', m: 'invoke', a: ['tool'] }, '[1,2]'],
  ['a reply with a value', { t: 's', i: 'r1', r: { status: 'ok', value: '"x"' } }, { t: 's', i: 'r1', r: { status: 'ok' } }, '"x"'],
  ['a binding result', { t: 's', i: 'r2', r: { value: '{}', images: [] } }, { t: 's', i: 'r2', r: { images: [] } }, '{}'],
  ['a reply without a value', { t: 's', i: 'r3', r: { status: 'ok' } }, { t: 's', i: 'r3', r: { status: 'ok' } }, undefined],
  ['an output message', { t: 'q', m: 'output', a: [{ type: 'text', text: 'hi' }] }, { t: 'q', m: 'output', a: [{ type: 'text', text: 'hi' }] }, undefined],
];

for (const [name, message, envelope, payload] of SPLITS) {
  test(`payload: ${name} splits and joins back`, () => {
    const split = splitPayload(message);
    assert.equal(split, payload === undefined ? { envelope } : { envelope, payload });
    if (payload !== undefined) assert.equal(joinPayload(JSON.parse(JSON.stringify(split.envelope)), payload), { message });
  });
}

test('payload: one after a message that carries none is a problem', () => {
  assert.equal(joinPayload({ t: 'q', m: 'output', a: [{}] }, '1'), { problem: 'a payload follows a message that carries none (request "output")' });
  assert.equal(joinPayload({ t: 'q', m: 'invoke', a: ['tool', '[]'] }, '1'), { problem: 'a payload follows a message that carries none (request "invoke")' });
  assert.equal(joinPayload({ t: 's', i: 'x', r: { value: '1' } }, '1'), { problem: 'a payload follows a message that carries none (frame type "s")' });
  assert.equal(joinPayload([1], '1'), { problem: 'a payload follows an envelope that is not an object' });
});

const STRINGS = ['', 'plain', '"quoted"', 'back\\slash', 'tab\tnew\nline', '\u0000\u0001\u001f', 'é', '€', '😀', '\ud83d', '\ude00', 'a\ud83d\ude00b', '\u2028'];

for (const text of STRINGS) {
  test(`limits: escapedBytes(${JSON.stringify(text)}) is its JSON literal's UTF-8 size`, () => {
    assert.is(escapedBytes(text), Buffer.byteLength(JSON.stringify(text)));
  });
}

test('limits: cutToEscapedBytes keeps the longest prefix that fits and never splits a pair', () => {
  const text = 'ab"\u0001😀é😀xyz';
  for (let budget = 2; budget <= escapedBytes(text) + 2; budget++) {
    const cut = cutToEscapedBytes(text, budget);
    assert.ok(text.startsWith(cut));
    assert.ok(escapedBytes(cut) <= budget, `${JSON.stringify(cut)} does not fit ${budget}`);
    if (cut.length < text.length) {
      const next = text.codePointAt(cut.length)! > 0xffff ? 2 : 1;
      assert.ok(escapedBytes(text.slice(0, cut.length + next)) > budget, `${JSON.stringify(cut)} is not the longest prefix for ${budget}`);
    }
    assert.not.ok(/[\ud800-\udbff]$/.test(cut), 'a surrogate pair was split');
  }
});

// The two frames of every binding call are written directly (quickFrame); the text must be what
// the general path (splitPayload, then encodeJson) writes, and any other shape must take that path.
const general = (message: Record<string, unknown>): string => {
  const { envelope, payload } = splitPayload(message);
  const text = encodeJson(envelope, 'message', { skipUndefinedMembers: true });
  return payload === undefined ? text : `${text}${PAYLOAD_SEPARATOR}${payload}`;
};
const awkward = 'quote " backslash \\ newline \n é \u{1F600} lone \ud800 \u2028';
const QUICK: Array<[string, Record<string, unknown>]> = [
  ['an invoke request', { t: 'q', i: '17', m: 'invoke', a: ['ping', '[1]'] }],
  ['an invoke request, from the carrier (no prototype)', { __proto__: null, t: 'q', i: '0', m: 'invoke', a: ['github.listIssues', '[{"q":"x"}]'] }],
  ['an invoke request with awkward strings', { t: 'q', i: awkward, m: 'invoke', a: [awkward, `["${'x'.repeat(100)}"]`] }],
  ['a binding reply with a value', { t: 's', i: 'abc', r: { value: '{"big":12345678901234567890}', images: [] } }],
  ['a binding reply without a value', { t: 's', i: awkward, r: { images: [] } }],
];
for (const [name, message] of QUICK) {
  test(`quick frame: ${name} is written as the general encoder writes it`, () => {
    assert.is(quickFrame(message), general(message));
  });
}

const GENERAL: Array<[string, Record<string, unknown>]> = [
  ['a one-way invoke', { t: 'q', m: 'invoke', a: ['ping', '[1]'] }],
  ['an invoke with an extra member', { t: 'q', i: '1', m: 'invoke', a: ['ping', '[1]'], o: true }],
  ['an invoke without its argument text', { t: 'q', i: '1', m: 'invoke', a: ['ping'] }],
  ['another request', { t: 'q', i: '1', m: 'run', a: [{ program: '1' }] }],
  ['a reply with images', { t: 's', i: '1', r: { value: '{}', images: [{ at: ['a'], image: { attachmentId: 'x', path: '/p', width: 1, height: 1 } }] } }],
  ['a reply with another member', { t: 's', i: '1', r: { value: '{}', images: [], extra: 1 } }],
  ['a reply whose value is not text', { t: 's', i: '1', r: { value: 1, images: [] } }],
  ['an error reply', { t: 's', i: '1', e: { name: 'Error', message: 'x' } }],
  ['a run outcome', { t: 's', i: '1', r: { status: 'ok', value: '1' } }],
  ['a reply with a numeric id', { t: 's', i: 1, r: { images: [] } }],
];
for (const [name, message] of GENERAL) {
  test(`quick frame: ${name} is left to the general encoder`, () => {
    assert.is(quickFrame(message), undefined);
  });
}

test.run();
