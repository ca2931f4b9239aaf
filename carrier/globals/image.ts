// Images the program can display. Only the host creates them (from a binding result or
// Image.fromFile), so an attachment id in the output always names a file the host has vetted.
// Image.fromFile opens the file here, under the sandbox, so the host is never asked about a file
// the program could not open itself; the host then reads the size from that same inode.
import { close, constants, fstat, open, read, stat } from 'node:fs';
import { resolve } from 'node:path';
import { inspect as utilInspect } from 'node:util';
import type { FileIdentity, ImageDescriptor, ImagePixels } from '../../wire/messages.ts';
import { fileKind, sizeFromReads } from '../../wire/image-size.ts';
import { append, defineProperty, ErrorCtor, freeze, NativePromise, SafeWeakMap, StringCtor, TypeErrorCtor } from '../hardening/intrinsics.ts';

// Built-ins through intrinsics.ts: an Image is made and shown while a program runs, after it may
// have replaced Object.defineProperty, WeakMap.prototype.set or the global Object.
const issued = new SafeWeakMap<object, ImageDescriptor>();
const constructing = Symbol('ptc.image.constructing');
// Non-blocking: opening a FIFO for reading would otherwise wait for a writer. O_NOCTTY: a terminal
// device must not become the carrier's controlling terminal.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;
const openFile = open;
const statFile = fstat;
const statPath = stat;
const closeFile = close;
const resolvePath = resolve;
const readFile = read;
const cwd = process.cwd;
const stringify = JSON.stringify;
let registerFile: ((path: string, identity: FileIdentity, pixels: ImagePixels) => Promise<ImageDescriptor>) | undefined;
let onInspected: ((descriptor: ImageDescriptor) => void) | undefined;

/** An image the program received or loaded; display it with inspect(image). */
export class Image {
  declare readonly attachmentId: string;
  declare readonly path: string;
  declare readonly width: number;
  declare readonly height: number;

  constructor(token: unknown, descriptor: ImageDescriptor) {
    if (token !== constructing) throw new TypeErrorCtor('Image cannot be constructed directly; use await Image.fromFile(path)');
    // Null-prototype descriptors: an ordinary literal would inherit a `get` a program put on Object.prototype.
    defineProperty(this, 'attachmentId', { __proto__: null, value: descriptor.attachmentId, enumerable: true } as PropertyDescriptor);
    defineProperty(this, 'path', { __proto__: null, value: descriptor.path, enumerable: true } as PropertyDescriptor);
    defineProperty(this, 'width', { __proto__: null, value: descriptor.width, enumerable: true } as PropertyDescriptor);
    defineProperty(this, 'height', { __proto__: null, value: descriptor.height, enumerable: true } as PropertyDescriptor);
    issued.set(this, descriptor);
    freeze(this);
  }

  /** Opens a PNG, JPEG, GIF or WebP file (relative to the cwd), has the host read its size, and returns an Image for it. */
  static async fromFile(path: string): Promise<Image> {
    if (typeof path !== 'string' || path === '') throw new TypeErrorCtor(`Image.fromFile expects a file path, got ${utilInspect(path)}`);
    const register = registerFile;
    if (register === undefined) throw new ErrorCtor('Image.fromFile is not available outside a run');
    const absolute = resolvePath(cwd(), path);
    const label = `Image.fromFile: "${absolute}"`;
    // A device is refused before it is opened: opening one can fail for its own reasons (ENXIO for
    // /dev/tty without a terminal) or have effects (a watchdog arms on open). The fstat below
    // still checks what was opened, in case the path changed in between.
    const kind = await pathKind(absolute);
    if (kind !== undefined) throw new TypeErrorCtor(`${label} is not a regular file (it is ${kind})`);
    let fd: number;
    try {
      fd = await openFd(absolute);
    } catch (error) {
      throw new ErrorCtor(`${label} cannot be read: ${(error as Error).message}`, { __proto__: null, cause: error } as ErrorOptions);
    }
    try {
      const file = await statFd(fd);
      if (file.kind !== undefined) throw new TypeErrorCtor(`${label} is not a regular file (it is ${file.kind})`);
      // Kept open until the host answers, so the inode it checks cannot be freed and reused meanwhile.
      // The size is read here too, under the sandbox: a remote host cannot read this machine's file,
      // and a local one checks the same inode itself.
      let pixels: ImagePixels;
      try {
        pixels = await sizeFromReads((buffer, offset, length, position, done) => readFile(fd, buffer, offset, length, position, (error, bytesRead) => done(error, bytesRead)), label);
      } catch (error) {
        // Made again here, after the await, so the stack (and the failure's location) leads to the program's call.
        const message = (error as Error).message;
        throw error instanceof TypeErrorCtor ? new TypeErrorCtor(message) : new ErrorCtor(message, { __proto__: null, cause: (error as Error).cause } as ErrorOptions);
      }
      const { width, height } = pixels;
      const identity = { __proto__: null, dev: file.dev, ino: file.ino } as FileIdentity;
      return createImage(await register(absolute, identity, { __proto__: null, width, height } as ImagePixels));
    } finally {
      await new NativePromise<void>((resolve) => closeFile(fd, () => resolve()));
    }
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    const descriptor = issued.get(this);
    if (descriptor === undefined) return 'Image {}';
    onInspected?.(descriptor);
    return `Image { attachmentId: '${descriptor.attachmentId}', width: ${descriptor.width}, height: ${descriptor.height}, path: ${stringify(descriptor.path)} }`;
  }
}

// An async function that returns an Image (fromFile) resolves its promise with it, which looks up
// `then`: an own undefined `then` keeps a program's Object.prototype.then from adopting the Image,
// as it would any other carrier value (intrinsics.ts, unthenable).
defineProperty(Image.prototype, 'then', { __proto__: null, value: undefined } as PropertyDescriptor);

/** Wraps a host-issued descriptor as a program-visible Image. */
export function createImage(descriptor: ImageDescriptor): Image {
  return new Image(constructing, descriptor);
}

/** The host descriptor behind an Image, or undefined for anything else. */
export function imageDescriptor(value: unknown): ImageDescriptor | undefined {
  return typeof value === 'object' && value !== null ? issued.get(value) : undefined;
}

// The callback API rather than fs/promises: a FileHandle is an EventEmitter, whose constructor
// calls Function.prototype.call, which a program may have replaced. The promises below settle with
// a number or a null-prototype record, so no program `then` is consulted.
function openFd(path: string): Promise<number> {
  return new NativePromise((resolve, reject) => openFile(path, OPEN_FLAGS, (error, fd) => (error ? reject(error) : resolve(fd))));
}

/** What the file at `path` is when it is not a regular file; undefined for a regular file, or when it cannot be stat'ed (open then says why). */
function pathKind(path: string): Promise<string | undefined> {
  return new NativePromise((resolve) => statPath(path, (error, stats) => resolve(error || stats.isFile() ? undefined : fileKind(stats))));
}

interface FileFacts {
  /** What the file is when it is not a regular file. */
  kind?: string;
  dev: string;
  ino: string;
}

function statFd(fd: number): Promise<FileFacts> {
  return new NativePromise((resolve, reject) =>
    statFile(fd, { __proto__: null, bigint: true } as { bigint: true }, (error, stats) => {
      if (error) return reject(error);
      resolve({ __proto__: null, kind: stats.isFile() ? undefined : fileKind(stats), dev: StringCtor(stats.dev), ino: StringCtor(stats.ino) } as FileFacts);
    }),
  );
}

/** Connects Image.fromFile to the host. */
export function setImageRegistrar(register: (path: string, identity: FileIdentity, pixels: ImagePixels) => Promise<ImageDescriptor>): void {
  registerFile = register;
}

/**
 * Collects the images that util.inspect reaches while `format` runs, once per place it shows one:
 * `inspect([img, img])` shows it twice, as `inspect(img, img)` does (a circular reference is not
 * formatted again, so it is not emitted again either).
 */
export function collectInspectedImages<T>(format: () => T): { result: T; images: ImageDescriptor[] } {
  const images: ImageDescriptor[] = [];
  const previous = onInspected;
  onInspected = (descriptor) => append(images, descriptor);
  try {
    return { result: format(), images };
  } finally {
    onInspected = previous;
  }
}
