// The relay's framing (wire/mux.ts): frames survive any split of the byte stream,
// long data is chunked at the limit, and a broken stream is reported once, naming what was wrong.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createMuxReader, muxChunks, muxFrame, MUX_MAX_PAYLOAD, type MuxType } from '../../../wire/mux.ts';

function read(chunks: Uint8Array[]): { frames: Array<[MuxType, string]>; errors: string[] } {
  const frames: Array<[MuxType, string]> = [];
  const errors: string[] = [];
  const reader = createMuxReader((type, payload) => frames.push([type, payload.toString('latin1')]), (message) => errors.push(message));
  for (const chunk of chunks) reader.push(chunk);
  return { frames, errors };
}

const stream = Buffer.concat([muxFrame('H', Buffer.from('{"revision":2}')), muxFrame('O', Buffer.from('X\x00\x00\x00\x05hello', 'latin1')), muxFrame('C', Buffer.from('{}\n')), muxFrame('C'), muxFrame('X', Buffer.from('{"code":0}'))]);
const expected: Array<[MuxType, string]> = [['H', '{"revision":2}'], ['O', 'X\x00\x00\x00\x05hello'], ['C', '{}\n'], ['C', ''], ['X', '{"code":0}']];

test('frames read back whole, whatever the stream looks like inside a payload', () => {
  assert.equal(read([stream]), { frames: expected, errors: [] });
});

test('every split of the byte stream yields the same frames', () => {
  for (let cut = 1; cut < stream.length; cut++) {
    assert.equal(read([stream.subarray(0, cut), stream.subarray(cut)]), { frames: expected, errors: [] }, `cut at ${cut}`);
  }
  assert.equal(read([...stream].map((byte) => Uint8Array.of(byte))), { frames: expected, errors: [] });
});

test('long data is split into frames of at most MUX_MAX_PAYLOAD bytes', () => {
  const data = Buffer.alloc(MUX_MAX_PAYLOAD * 2 + 7, 0x61);
  const frames = muxChunks('C', data);
  assert.equal(frames.map((frame) => frame.length - 5), [MUX_MAX_PAYLOAD, MUX_MAX_PAYLOAD, 7]);
  assert.is(read(frames).frames.map(([, payload]) => payload).join(''), data.toString('latin1'));
  assert.equal(muxChunks('C', Buffer.alloc(0)), []);
});

test('an oversized frame or an unknown type is reported once, and reading stops', () => {
  const big = Buffer.from([0x4f, 0xff, 0xff, 0xff, 0xff]);
  assert.equal(read([big, muxFrame('O', Buffer.from('late'))]), { frames: [], errors: ['unreadable relay stream: a 4294967295-byte "O" frame (the limit is 65536)'] });
  assert.equal(read([muxFrame('O', Buffer.from('ok')), Buffer.from('Qzzzz')]), { frames: [['O', 'ok']], errors: ['unreadable relay stream: frame type byte 0x51'] });
});

test.run();
