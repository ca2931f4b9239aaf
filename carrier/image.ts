// Images the program can display. Only the host creates them (from a binding result or
// Image.fromFile), so an attachment id in the output always names a file the host has vetted.
// Image.fromFile opens the file here, under the sandbox, so the host is never asked about a file
// the program could not open itself; the host then reads the size from that same inode.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import { inspect as utilInspect } from 'node:util';
import type { FileIdentity, ImageDescriptor, ImagePixels } from './protocol/messages.ts';
import { sizeFromHandle } from './protocol/image-size.ts';

const issued = new WeakMap<object, ImageDescriptor>();
const constructing = Symbol('ptc.image.constructing');
// Non-blocking: opening a FIFO for reading would otherwise wait for a writer. O_NOCTTY: a terminal
// device must not become the carrier's controlling terminal.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;
const openFile = open;
const resolvePath = resolve;
let registerFile: ((path: string, identity: FileIdentity, pixels: ImagePixels) => Promise<ImageDescriptor>) | undefined;
let onInspected: ((descriptor: ImageDescriptor) => void) | undefined;

/** An image the program received or loaded; display it with inspect(image). */
export class Image {
  declare readonly attachmentId: string;
  declare readonly path: string;
  declare readonly width: number;
  declare readonly height: number;

  constructor(token: unknown, descriptor: ImageDescriptor) {
    if (token !== constructing) throw new TypeError('Image cannot be constructed directly; use await Image.fromFile(path)');
    Object.defineProperties(this, {
      attachmentId: { value: descriptor.attachmentId, enumerable: true },
      path: { value: descriptor.path, enumerable: true },
      width: { value: descriptor.width, enumerable: true },
      height: { value: descriptor.height, enumerable: true },
    });
    issued.set(this, descriptor);
    Object.freeze(this);
  }

  /** Opens a PNG, JPEG, GIF or WebP file (relative to the cwd), has the host read its size, and returns an Image for it. */
  static async fromFile(path: string): Promise<Image> {
    if (typeof path !== 'string' || path === '') throw new TypeError(`Image.fromFile expects a file path, got ${utilInspect(path)}`);
    const register = registerFile;
    if (register === undefined) throw new Error('Image.fromFile is not available outside a run');
    const absolute = resolvePath(process.cwd(), path);
    const label = `Image.fromFile: "${absolute}"`;
    let handle;
    try {
      handle = await openFile(absolute, OPEN_FLAGS);
    } catch (error) {
      throw new Error(`${label} cannot be read: ${(error as Error).message}`, { cause: error });
    }
    try {
      const stats = await handle.stat({ bigint: true });
      if (!stats.isFile()) throw new TypeError(`${label} is not a regular file (it is ${fileKind(stats)})`);
      // Kept open until the host answers, so the inode it checks cannot be freed and reused meanwhile.
      // Read here, under the sandbox: a remote host cannot read this machine's file, and a local
      // one checks the same inode itself.
      const { width, height } = await sizeFromHandle(handle, label);
      return createImage(await register(absolute, { dev: String(stats.dev), ino: String(stats.ino) }, { width, height }));
    } finally {
      await handle.close().catch(() => {});
    }
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    const descriptor = issued.get(this);
    if (descriptor === undefined) return 'Image {}';
    onInspected?.(descriptor);
    return `Image { attachmentId: '${descriptor.attachmentId}', width: ${descriptor.width}, height: ${descriptor.height}, path: ${JSON.stringify(descriptor.path)} }`;
  }
}

/** Wraps a host-issued descriptor as a program-visible Image. */
export function createImage(descriptor: ImageDescriptor): Image {
  return new Image(constructing, descriptor);
}

/** The host descriptor behind an Image, or undefined for anything else. */
export function imageDescriptor(value: unknown): ImageDescriptor | undefined {
  return typeof value === 'object' && value !== null ? issued.get(value) : undefined;
}

/** Connects Image.fromFile to the host. */
export function setImageRegistrar(register: (path: string, identity: FileIdentity, pixels: ImagePixels) => Promise<ImageDescriptor>): void {
  registerFile = register;
}

function fileKind(stats: { isDirectory(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** Collects the images that util.inspect reaches while `format` runs. */
export function collectInspectedImages<T>(format: () => T): { result: T; images: ImageDescriptor[] } {
  const images: ImageDescriptor[] = [];
  const previous = onInspected;
  onInspected = (descriptor) => {
    if (!images.includes(descriptor)) images.push(descriptor);
  };
  try {
    return { result: format(), images };
  } finally {
    onInspected = previous;
  }
}
