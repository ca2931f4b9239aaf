import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { imageSizeFromBytes, readImageSize, SCAN_LIMIT, type ImageSize } from '../../../wire/image-size.ts';
import { rejection, thrown } from '../../helpers/assert.ts';

// Fixtures are made by test/fixtures/images/generate.sh (real ImageMagick + cwebp); names carry the expected size.
const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'images');
const fixtures = (await readdir(FIXTURES)).filter((name) => /-\d+x\d+\.\w+$/.test(name)).sort();
const FORMAT: Record<string, ImageSize['format']> = { png: 'png', jpg: 'jpeg', gif: 'gif', webp: 'webp' };

function expected(name: string): ImageSize {
  const [, width, height, ext] = /-(\d+)x(\d+)\.(\w+)$/.exec(name)!;
  return { format: FORMAT[ext!]!, width: Number(width), height: Number(height) };
}

let dir = '';
test.before(async () => { dir = await mkdtemp(join(tmpdir(), 'ptc-image-size-')); });
test.after(async () => { await rm(dir, { recursive: true, force: true }); });

async function tempFile(name: string, bytes: Uint8Array | string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}



const u16be = (n: number): number[] => [n >> 8, n & 0xff];
/** A JPEG marker segment: FF, marker, big-endian length (counting itself), payload. */
const segment = (marker: number, payloadLength: number, fill = 0): Uint8Array => {
  const bytes = new Uint8Array(4 + payloadLength).fill(fill);
  bytes.set([0xff, marker, ...u16be(payloadLength + 2)]);
  return bytes;
};
const concat = (...parts: (Uint8Array | number[])[]): Uint8Array => Buffer.concat(parts.map((p) => Uint8Array.from(p)));

test('fixtures cover every format and WebP flavour', () => {
  assert.equal(fixtures, [
    'baseline-301x9.jpg', 'extended-vp8x-307x15.webp', 'gif87a-304x12.gif', 'gif89a-303x11.gif',
    'lossless-vp8l-306x14.webp', 'lossy-vp8-305x13.webp', 'progressive-302x10.jpg', 'rgb-300x7.png',
  ]);
});

for (const name of fixtures) {
  test(`reads ${name}`, async () => {
    const path = join(FIXTURES, name);
    assert.equal(await readImageSize(path), expected(name));
    assert.equal(imageSizeFromBytes(await readFile(path), name), expected(name));
  });

  test(`every prefix of ${name} gives the size or a clear TypeError`, async () => {
    const bytes = await readFile(join(FIXTURES, name));
    let sizedFrom = -1;
    for (let n = 0; n <= bytes.length; n++) {
      try {
        assert.equal(imageSizeFromBytes(bytes.subarray(0, n), 'x'), expected(name));
        if (sizedFrom < 0) sizedFrom = n;
      } catch (error) {
        assert.instance(error, TypeError, `prefix ${n}: ${error}`);
        assert.match((error as Error).message, /^x is (truncated|not a PNG, JPEG, GIF or WebP image)$/);
        assert.is(sizedFrom, -1, `prefix ${n} failed after a shorter prefix succeeded`);
      }
    }
    assert.ok(sizedFrom > 0 && sizedFrom < 400, `sized from ${sizedFrom} bytes`);
  });
}

test('the VP8X fixture really is extended, and the others plain', async () => {
  const chunk = async (name: string) => (await readFile(join(FIXTURES, name))).toString('latin1', 12, 16);
  assert.is(await chunk('extended-vp8x-307x15.webp'), 'VP8X');
  assert.is(await chunk('lossless-vp8l-306x14.webp'), 'VP8L');
  assert.is(await chunk('lossy-vp8-305x13.webp'), 'VP8 ');
});

test('JPEG with EXIF and ICC segments (> 64 KiB) before SOF, file and memory', async () => {
  const jpeg = await readFile(join(FIXTURES, 'baseline-301x9.jpg'));
  const big = concat(
    jpeg.subarray(0, 2), // SOI
    segment(0xe1, 65533, 0xff), // largest possible APP1, payload of 0xFF bytes that must not be taken as markers
    [0xff, 0xff, 0xff], // fill bytes before the next marker
    segment(0xe2, 40000),
    jpeg.subarray(2),
  );
  assert.ok(big.length > 100_000);
  const path = await tempFile('big-exif.jpg', big);
  assert.equal(await readImageSize(path), { format: 'jpeg', width: 301, height: 9 });
  assert.equal(imageSizeFromBytes(big, 'big'), { format: 'jpeg', width: 301, height: 9 });
});

test('JPEG markers straddling the 64 KiB read boundary', async () => {
  const jpeg = await readFile(join(FIXTURES, 'baseline-301x9.jpg'));
  const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
  // Slide the original segments (APP0, DQT, SOF0) across byte 65536, one byte at a time.
  for (let app1 = 65533 - sof - 12; app1 <= 65533; app1++) {
    const bytes = concat(jpeg.subarray(0, 2), segment(0xe1, app1), jpeg.subarray(2));
    const path = await tempFile(`slide-${app1}.jpg`, bytes);
    assert.equal(await readImageSize(path), { format: 'jpeg', width: 301, height: 9 }, `APP1 payload ${app1}`);
    await rm(path);
  }
});

test('JPEG: fill bytes, standalone markers, and DHT/JPG/DAC are not mistaken for SOF', () => {
  const bytes = concat(
    [0xff, 0xd8], // SOI
    [0xff, 0x01], // TEM
    [0xff, 0xff, 0xd0], // fill byte, RST0
    [0xff, 0xc4, 0, 7, 8, 0, 1, 0, 1], // DHT, payload shaped like a 1x1 SOF
    [0xff, 0xc8, 0, 7, 8, 0, 2, 0, 2], // JPG
    [0xff, 0xcc, 0, 7, 8, 0, 3, 0, 3], // DAC
    [0xff, 0xff, 0xff, 0xc2, 0, 11, 8, ...u16be(600), ...u16be(1000), 1, 1, 0x11, 0], // SOF2 1000x600
  );
  assert.equal(imageSizeFromBytes(bytes, 'm'), { format: 'jpeg', width: 1000, height: 600 });
  // The extended/lossless/arithmetic SOFs count too.
  for (const marker of [0xc1, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]) {
    const sof = concat([0xff, 0xd8, 0xff, marker, 0, 8, 8, 0, 5, 0, 6]);
    assert.equal(imageSizeFromBytes(sof, 'm'), { format: 'jpeg', width: 6, height: 5 });
  }
});

test('large dimensions use every bit of their fields', () => {
  const riff = (chunk: string, payload: number[]) =>
    concat(Buffer.from('RIFF'), [0, 0, 0, 0], Buffer.from(`WEBP${chunk}`), [0, 0, 0, 0], payload);
  // VP8X canvas: 24-bit width-1 / height-1.
  assert.equal(imageSizeFromBytes(riff('VP8X', [0, 0, 0, 0, 0xff, 0xff, 0xff, 0x00, 0x00, 0x01]), 'a'),
    { format: 'webp', width: 0x1000000, height: 0x10001 });
  // VP8L: 14 bits width-1 then 14 bits height-1; 0x0fffffff is both at maximum.
  assert.equal(imageSizeFromBytes(riff('VP8L', [0x2f, 0xff, 0xff, 0xff, 0x0f]), 'b'),
    { format: 'webp', width: 16384, height: 16384 });
  // VP8: the top two bits of each 16-bit field are the scale, not the size.
  assert.equal(imageSizeFromBytes(riff('VP8 ', [0, 0, 0, 0x9d, 0x01, 0x2a, 0xff, 0xff, 0x01, 0xc0]), 'c'),
    { format: 'webp', width: 0x3fff, height: 1 });
  const png = concat([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13], Buffer.from('IHDR'),
    [0x80, 0, 0, 1, 0, 1, 2, 3]);
  assert.equal(imageSizeFromBytes(png, 'd'), { format: 'png', width: 0x80000001, height: 0x10203 });
});

test('not an image: error is a TypeError quoting the path', async () => {
  const path = await tempFile('x.txt', 'hello, this is not an image at all\n');
  const error = await rejection(readImageSize(path));
  assert.instance(error, TypeError);
  assert.is(error.message, `Image.fromFile: "${path}" is not a PNG, JPEG, GIF or WebP image`);
});

test('tiny and empty files get a clear error, not a RangeError', async () => {
  for (const [name, bytes, problem] of [
    ['empty', new Uint8Array(0), 'is not a PNG, JPEG, GIF or WebP image'],
    ['three', Uint8Array.of(0x47, 0x49, 0x46), 'is not a PNG, JPEG, GIF or WebP image'],
    ['soi', Uint8Array.of(0xff, 0xd8, 0xff), 'is truncated'],
    ['gif', new TextEncoder().encode('GIF89a\x01'), 'is truncated'],
    ['riff', new TextEncoder().encode('RIFF\0\0\0\0WEBPVP8'), 'is truncated'],
  ] as const) {
    const path = await tempFile(name, bytes);
    const error = await rejection(readImageSize(path));
    assert.instance(error, TypeError, name);
    assert.is(error.message, `Image.fromFile: "${path}" ${problem}`);
  }
});

test('truncated JPEG: the file ends inside a big segment before SOF', async () => {
  const jpeg = await readFile(join(FIXTURES, 'baseline-301x9.jpg'));
  const bytes = concat(jpeg.subarray(0, 2), segment(0xe1, 65533), segment(0xe2, 30000)).subarray(0, 90_000);
  const path = await tempFile('cut.jpg', bytes);
  const error = await rejection(readImageSize(path));
  assert.instance(error, TypeError);
  assert.is(error.message, `Image.fromFile: "${path}" is truncated`);
  assert.is(thrown(() => imageSizeFromBytes(bytes, 'mem')).message, 'mem is truncated');
});

test('corrupt headers name the source and the problem', () => {
  const messageOf = (bytes: Uint8Array) => {
    const error = thrown(() => imageSizeFromBytes(bytes, 'src'));
    assert.instance(error, TypeError);
    return error.message;
  };
  assert.is(messageOf(concat([0xff, 0xd8, 0xff, 0xda, 0, 2])), 'src is not a valid JPEG image: no SOF marker before the image data');
  assert.is(messageOf(concat([0xff, 0xd8, 0xff, 0xe0, 0, 2, 0x12])), 'src is not a valid JPEG image: expected a marker at byte 6');
  assert.is(messageOf(concat([0xff, 0xd8, 0xff, 0xe0, 0, 1])), 'src is not a valid JPEG image: bad segment length at byte 4');
  const png = concat([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13], Buffer.from('IDAT'), new Uint8Array(8));
  assert.is(messageOf(png), 'src is not a valid PNG image: first chunk is not IHDR');
  const webp = concat(Buffer.from('RIFF\0\0\0\0WEBPALPH\0\0\0\0'), new Uint8Array(10));
  assert.is(messageOf(webp), 'src is not a valid WebP image: unknown first chunk "ALPH"');
  const vp8 = concat(Buffer.from('RIFF\0\0\0\0WEBPVP8 \0\0\0\0'), new Uint8Array(10));
  assert.is(messageOf(vp8), 'src is not a valid WebP image: missing VP8 start code');
});

test('missing file and directory: the error names the path and keeps the cause', async () => {
  const missing = join(dir, 'nope.png');
  const error = await rejection(readImageSize(missing));
  assert.ok(error.message.startsWith(`Image.fromFile: "${missing}" cannot be read: ENOENT`), error.message);
  assert.is((error.cause as NodeJS.ErrnoException).code, 'ENOENT');
  const isDir = await rejection(readImageSize(dir));
  assert.instance(isDir, TypeError);
  assert.is(isDir.message, `Image.fromFile: "${dir}" is not a regular file (it is a directory)`);
});

test('a FIFO and a character device are refused without blocking on a read', async () => {
  const fifo = join(dir, 'pipe.png');
  execFileSync('mkfifo', [fifo]);
  // No writer ever opens the FIFO: a blocking open or read would never return.
  const error = await rejection(readImageSize(fifo));
  assert.instance(error, TypeError);
  assert.is(error.message, `Image.fromFile: "${fifo}" is not a regular file (it is a FIFO)`);
  for (const device of ['/dev/zero', '/dev/kmsg'].filter((path) => existsSync(path))) {
    const refused = await rejection(readImageSize(device));
    // /dev/kmsg may be closed to this user (EPERM on open), which is refused just as well.
    assert.ok(refused.message === `Image.fromFile: "${device}" is not a regular file (it is a character device)` || refused.message.includes('cannot be read'), refused.message);
  }
});

test('with an identity, only the same inode is read', async () => {
  const path = await tempFile('same.png', await readFile(join(FIXTURES, 'rgb-300x7.png')));
  const { dev, ino } = statSync(path, { bigint: true });
  assert.equal(await readImageSize(path, { dev: String(dev), ino: String(ino) }), { format: 'png', width: 300, height: 7 });
  const error = await rejection(readImageSize(path, { dev: String(dev), ino: String(ino + 1n) }));
  assert.is(error.message, `Image.fromFile: "${path}" changed while it was being read (it is no longer the file the program opened)`);
});

test('a JPEG whose SOF lies past the scan limit is refused after reading a bounded prefix', async () => {
  // Largest segments, back to back, past SCAN_LIMIT: the reader must stop, not walk the whole file.
  const count = Math.ceil(SCAN_LIMIT / 65537) + 2;
  const parts: Uint8Array[] = [Uint8Array.from([0xff, 0xd8])];
  for (let i = 0; i < count; i++) parts.push(segment(0xe1, 65533));
  const path = await tempFile('deep.jpg', concat(...parts));
  const error = await rejection(readImageSize(path));
  assert.is(error.message, `Image.fromFile: "${path}" is not a valid JPEG image: no SOF marker in its first ${SCAN_LIMIT} bytes`);
});

test.run();
