// Pixel size of PNG, JPEG, GIF and WebP images, read from their header bytes without decoding them.
// Reading is bounded: regular files only, opened without blocking (a FIFO or a device such as
// /dev/kmsg would otherwise hold a thread-pool thread forever), and at most SCAN_LIMIT bytes.
import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import type { FileIdentity } from './messages.ts';

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';
export interface ImageSize { format: ImageFormat; width: number; height: number }


/** Bytes read at once; every format's size fits in here except a JPEG with large metadata segments before SOFn. */
const WINDOW = 64 * 1024;
/** How far into a JPEG the SOFn marker is looked for; metadata segments (EXIF, ICC, XMP) are rarely over a few MiB. */
export const SCAN_LIMIT = 16 * 1024 * 1024;
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

// The carrier reads sizes after a program has run (Image.fromFile), so the reading uses only what
// is captured here at load: no await (it reads a promise's constructor), no promise resolved with
// a plain object (that reads its then), no Array or String methods a program could replace.
const { apply } = Reflect;
const promiseThen = Promise.prototype.then;
const NativePromise = Promise;
const Uint8ArrayCtor = Uint8Array;
const DataViewCtor = DataView;
const subarray = Uint8Array.prototype.subarray;
const { getUint16, getUint32 } = DataView.prototype;
const fromCharCode = String.fromCharCode;
const TypeErrorCtor = TypeError;
const ErrorCtor = Error;

/**
 * Reads the pixel size of a PNG, JPEG, GIF or WebP file from its header bytes. With `identity`,
 * the file must be the one the carrier opened (same device and inode). Throws a TypeError naming
 * the path when the file is not a regular file of one of those formats, or is truncated/corrupt.
 * `caller` names what asked, in those messages.
 */
export async function readImageSize(path: string, identity?: FileIdentity, caller = 'Image.fromFile'): Promise<ImageSize> {
  const label = `${caller}: "${path}"`;
  // Only the host reads a file's size by path; loaded here, node:fs/promises stays out of every carrier's boot.
  const { open } = await import('node:fs/promises');
  const handle = await io(label, open(path, OPEN_FLAGS));
  try {
    const stats = await io(label, handle.stat({ bigint: true }));
    if (!stats.isFile()) throw new TypeError(`${label} is not a regular file (it is ${fileKind(stats)})`);
    if (identity !== undefined && (String(stats.dev) !== identity.dev || String(stats.ino) !== identity.ino)) {
      throw new TypeError(`${label} changed while it was being read (it is no longer the file the program opened)`);
    }
    const { format, width, height } = await sizeFromHandle(handle, label);
    return { format, width, height };
  } finally {
    await handle.close();
  }
}

/**
 * The size from an open regular file's header bytes, reading at most SCAN_LIMIT of them. The
 * promise resolves with a prototype-less object, which no program's Object.prototype.then adopts.
 */
export function sizeFromHandle(handle: FileHandle, label: string): Promise<ImageSize> {
  return sizeFromReads((buffer, offset, length, position, done) => {
    let reading: Promise<{ bytesRead: number }>;
    try {
      reading = handle.read(buffer, offset, length, position);
    } catch (error) {
      return done(error, 0);
    }
    apply(promiseThen, reading, [(result: { bytesRead: number }) => done(null, result.bytesRead), (error: unknown) => done(error, 0)]);
  }, label);
}

/** Reads `length` bytes at `position` into `buffer` at `offset`, then calls `done` (0 bytes: the end of the file). */
export type ReadAt = (buffer: Uint8Array, offset: number, length: number, position: number, done: (error: unknown, bytesRead: number) => void) => void;

/**
 * The same from any positional reader. The carrier reads with fs's callback API: a FileHandle is an
 * EventEmitter, whose constructor calls Function.prototype.call, which a program may have replaced.
 */
export function sizeFromReads(read: ReadAt, label: string): Promise<ImageSize> {
  return new NativePromise((resolve, reject) => {
    // EXIF/ICC/XMP segments can push SOFn far past the first window: skip segments by their length, reading on.
    let base = 0;
    let start = 2; // after SOI
    const scan = (window: Uint8Array): void => {
      const step = scanJpeg(window, start, label);
      if (typeof step !== 'number') return resolve(bare(step));
      if (window.length < WINDOW) return reject(truncated(label)); // this window already reached the end of the file
      base += step;
      if (base >= SCAN_LIMIT) return reject(corrupt(label, 'JPEG', `no SOF marker in its first ${SCAN_LIMIT} bytes`));
      start = 0;
      readWindow(read, base, label, scan, reject);
    };
    readWindow(read, 0, label, (window) => {
      try {
        if (detect(window) !== 'jpeg') return resolve(bare(imageSizeFromBytes(window, label)));
        scan(window);
      } catch (error) {
        reject(error);
      }
    }, reject);
  });
}

/** What a non-regular file is, for the error message. */
export function fileKind(stats: Pick<BigIntStats, 'isDirectory' | 'isFIFO' | 'isCharacterDevice' | 'isBlockDevice' | 'isSocket'>): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** Same, from bytes already in memory; `label` names the source in error messages. */
export function imageSizeFromBytes(bytes: Uint8Array, label: string): ImageSize {
  const view = new DataViewCtor(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (n: number): void => { if (bytes.length < n) throw truncated(label); };
  switch (detect(bytes)) {
    case 'png':
      // 8-byte signature, then the IHDR chunk: length(4) type(4) width(4) height(4), big-endian.
      need(24);
      if (ascii(bytes, 12, 4) !== 'IHDR') throw corrupt(label, 'PNG', 'first chunk is not IHDR');
      return size('png', apply(getUint32, view, [16]) as number, apply(getUint32, view, [20]) as number);
    case 'gif':
      // "GIF87a"/"GIF89a", then the logical screen width and height, little-endian.
      need(10);
      return size('gif', apply(getUint16, view, [6, true]) as number, apply(getUint16, view, [8, true]) as number);
    case 'jpeg': {
      const step = scanJpeg(bytes, 2, label);
      if (typeof step === 'number') throw truncated(label);
      return step;
    }
    case 'webp':
      return webpSize(bytes, view, label);
    default:
      throw new TypeErrorCtor(`${label} is not a PNG, JPEG, GIF or WebP image`);
  }
}

function detect(b: Uint8Array): ImageFormat | undefined {
  if (hasBytes(b, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (hasBytes(b, 0, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (ascii(b, 0, 6) === 'GIF87a' || ascii(b, 0, 6) === 'GIF89a') return 'gif';
  if (ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === 'WEBP') return 'webp';
  return undefined;
}

/**
 * Walks JPEG markers from `i` (where a marker is expected) to the first SOFn. Returns the size, or, when the
 * bytes run out first, the index to resume from once more bytes are available (may lie beyond `b.length`).
 */
function scanJpeg(b: Uint8Array, i: number, label: string): ImageSize | number {
  for (;;) {
    if (i >= b.length) return i;
    if (b[i] !== 0xff) throw corrupt(label, 'JPEG', `expected a marker at byte ${i}`);
    let j = i + 1;
    while (j < b.length && b[j] === 0xff) j++; // any number of 0xFF fill bytes may precede the marker code
    if (j >= b.length) return j - 1; // resume at the last 0xFF, which still starts a valid marker
    const marker = b[j]!;
    // SOI, TEM and RST0..7 stand alone: no length field follows.
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) { i = j + 1; continue; }
    // Start of scan or end of image: entropy-coded data follows or nothing does, and no SOFn was seen.
    if (marker === 0xda || marker === 0xd9) throw corrupt(label, 'JPEG', 'no SOF marker before the image data');
    if (j + 3 > b.length) return j - 1;
    const length = (b[j + 1]! << 8) | b[j + 2]!; // counts itself but not the marker
    if (length < 2) throw corrupt(label, 'JPEG', `bad segment length at byte ${j + 1}`);
    // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC) which share the range.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      // SOFn payload: length(2) precision(1) height(2) width(2).
      if (j + 8 > b.length) return j - 1;
      return size('jpeg', (b[j + 6]! << 8) | b[j + 7]!, (b[j + 4]! << 8) | b[j + 5]!);
    }
    i = j + 1 + length;
  }
}

function webpSize(b: Uint8Array, view: DataView, label: string): ImageSize {
  // RIFF header (12 bytes), then the first chunk: fourCC(4) size(4) payload from byte 20.
  const need = (n: number): void => { if (b.length < n) throw truncated(label); };
  need(20);
  const chunk = ascii(b, 12, 4);
  if (chunk === 'VP8 ') {
    // Lossy: 3-byte frame tag, start code 9d 01 2a, then 14-bit width and height (top 2 bits are scaling).
    need(30);
    if (!hasBytes(b, 23, [0x9d, 0x01, 0x2a])) throw corrupt(label, 'WebP', 'missing VP8 start code');
    return size('webp', (apply(getUint16, view, [26, true]) as number) & 0x3fff, (apply(getUint16, view, [28, true]) as number) & 0x3fff);
  }
  if (chunk === 'VP8L') {
    // Lossless: signature byte 0x2f, then width-1 and height-1 as consecutive 14-bit fields, LSB first.
    need(25);
    if (b[20] !== 0x2f) throw corrupt(label, 'WebP', 'missing VP8L signature');
    const bits = apply(getUint32, view, [21, true]) as number;
    return size('webp', (bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (chunk === 'VP8X') {
    // Extended: flags(1) reserved(3), then canvas width-1 and height-1 as 24-bit little-endian.
    need(30);
    const u24 = (at: number): number => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
    return size('webp', u24(24) + 1, u24(27) + 1);
  }
  throw corrupt(label, 'WebP', `unknown first chunk "${chunk}"`);
}

/** Reads up to WINDOW bytes at `position`; fewer only at the end of the file. */
function readWindow(read: ReadAt, position: number, label: string, done: (window: Uint8Array) => void, fail: (error: unknown) => void): void {
  const buffer = new Uint8ArrayCtor(WINDOW);
  const next = (filled: number): void => {
    if (filled >= WINDOW) return done(buffer);
    read(buffer, filled, WINDOW - filled, position + filled, (error, bytesRead) => {
      if (error !== null && error !== undefined) return fail(readError(label, error));
      if (bytesRead === 0) return done(apply(subarray, buffer, [0, filled]) as Uint8Array); // the end of the file
      next(filled + bytesRead);
    });
  };
  next(0);
}

/** File-system failures (missing file, directory, permissions) keep their cause but name the path up front. */
function readError(label: string, error: unknown): Error {
  return new ErrorCtor(`${label} cannot be read: ${(error as Error).message}`, { cause: error });
}

/** The same for the host's own reads, which run in the host and may await. */
async function io<T>(label: string, promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    throw readError(label, error);
  }
}

/** A size without a prototype, for resolving a promise: a program's Object.prototype.then cannot adopt it. */
function bare({ format, width, height }: ImageSize): ImageSize {
  return { __proto__: null, format, width, height } as ImageSize;
}

function size(format: ImageFormat, width: number, height: number): ImageSize {
  return { format, width, height };
}

function hasBytes(b: Uint8Array, at: number, expected: number[]): boolean {
  if (b.length < at + expected.length) return false;
  for (let k = 0; k < expected.length; k++) if (b[at + k] !== expected[k]) return false;
  return true;
}

function ascii(b: Uint8Array, at: number, length: number): string {
  let text = '';
  for (let k = at; k < at + length && k < b.length; k++) text += fromCharCode(b[k]!);
  return text;
}

function truncated(label: string): TypeError {
  return new TypeErrorCtor(`${label} is truncated`);
}

function corrupt(label: string, format: string, detail: string): TypeError {
  return new TypeErrorCtor(`${label} is not a valid ${format} image: ${detail}`);
}
