// The resident pool's own SHA-256 and HMAC (host/resident-hash.ts) against node:crypto's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { hex, hmacSha256, sha256 } from '../../../host/resident-hash.ts';

test('sha256 equals node:crypto for every length from 0 to 300 bytes, across the padding boundaries', () => {
  for (let length = 0; length <= 300; length++) {
    const data = randomBytes(length);
    assert.is(hex(sha256(data)), createHash('sha256').update(data).digest('hex'), `length ${length}`);
  }
});

test('sha256 of a known vector and of a message over a megabyte', () => {
  assert.is(hex(sha256(Buffer.from('abc'))), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  const big = randomBytes((1 << 20) + 13);
  assert.is(hex(sha256(big)), createHash('sha256').update(big).digest('hex'));
});

test('hmacSha256 equals node:crypto for keys shorter than, equal to and longer than a block', () => {
  for (const keyLength of [0, 1, 32, 63, 64, 65, 200]) {
    for (const messageLength of [0, 1, 55, 56, 64, 119, 500]) {
      const key = randomBytes(keyLength);
      const message = randomBytes(messageLength);
      assert.is(hex(hmacSha256(key, message)), createHmac('sha256', key).update(message).digest('hex'), `key ${keyLength}, message ${messageLength}`);
    }
  }
});

test.run();
