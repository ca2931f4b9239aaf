// SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104) for the resident pool's handshake, in plain
// JavaScript: loading node:crypto costs a `ptc run` start about 4.5 ms, a fifth of a bare Node
// start, for hashing a few hundred bytes. test/unit/host/resident-hash.test.ts checks every
// length from 0 to 300 bytes and random keys against node:crypto.

/** The first 32 bits of the fractional parts of the square (8) and cube (64) roots of the first 64 primes. */
const { INITIAL, ROUND } = (() => {
  const primes: number[] = [];
  for (let candidate = 2; primes.length < 64; candidate++) {
    if (primes.every((prime) => candidate % prime !== 0)) primes.push(candidate);
  }
  const fraction = (value: number): number => ((value - Math.floor(value)) * 2 ** 32) >>> 0;
  return {
    INITIAL: Uint32Array.from(primes.slice(0, 8), (prime) => fraction(Math.sqrt(prime))),
    ROUND: Uint32Array.from(primes, (prime) => fraction(Math.cbrt(prime))),
  };
})();

const rotate = (value: number, bits: number): number => (value >>> bits) | (value << (32 - bits));

/** The SHA-256 digest of `data`. */
export function sha256(data: Uint8Array): Uint8Array {
  const length = data.length;
  const blocks = Math.ceil((length + 9) / 64);
  const padded = new Uint8Array(blocks * 64);
  padded.set(data);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  // The message length in bits, big-endian, in the last 8 bytes.
  view.setUint32(padded.length - 8, Math.floor(length / 2 ** 29));
  view.setUint32(padded.length - 4, (length * 8) >>> 0);
  const hash = Uint32Array.from(INITIAL);
  const words = new Uint32Array(64);
  for (let block = 0; block < blocks; block++) {
    for (let i = 0; i < 16; i++) words[i] = view.getUint32(block * 64 + i * 4);
    for (let i = 16; i < 64; i++) {
      const a = words[i - 15]!;
      const b = words[i - 2]!;
      const s0 = rotate(a, 7) ^ rotate(a, 18) ^ (a >>> 3);
      const s1 = rotate(b, 17) ^ rotate(b, 19) ^ (b >>> 10);
      words[i] = (words[i - 16]! + s0 + words[i - 7]! + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, h] = hash as unknown as [number, number, number, number, number, number, number, number];
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)) + ((e & f) ^ (~e & g)) + ROUND[i]! + words[i]!) >>> 0;
      const t2 = ((rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    hash[0] = (hash[0]! + a) >>> 0;
    hash[1] = (hash[1]! + b) >>> 0;
    hash[2] = (hash[2]! + c) >>> 0;
    hash[3] = (hash[3]! + d) >>> 0;
    hash[4] = (hash[4]! + e) >>> 0;
    hash[5] = (hash[5]! + f) >>> 0;
    hash[6] = (hash[6]! + g) >>> 0;
    hash[7] = (hash[7]! + h) >>> 0;
  }
  const digest = new Uint8Array(32);
  const out = new DataView(digest.buffer);
  for (let i = 0; i < 8; i++) out.setUint32(i * 4, hash[i]!);
  return digest;
}

/** HMAC-SHA-256 of `message` under `key`. */
export function hmacSha256(key: Uint8Array, message: Uint8Array): Uint8Array {
  const block = new Uint8Array(64);
  block.set(key.length > 64 ? sha256(key) : key);
  const inner = new Uint8Array(64 + message.length);
  const outer = new Uint8Array(64 + 32);
  for (let i = 0; i < 64; i++) {
    inner[i] = block[i]! ^ 0x36;
    outer[i] = block[i]! ^ 0x5c;
  }
  inner.set(message, 64);
  outer.set(sha256(inner), 64);
  return sha256(outer);
}

/** Lower-case hex of `bytes`. */
export function hex(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += byte.toString(16).padStart(2, '0');
  return text;
}
