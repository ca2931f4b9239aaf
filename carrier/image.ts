// Images the program can display. Only the host creates them (from a binding result or
// Image.fromFile), so an attachment id in the output always names a file the host has vetted.
import { inspect as utilInspect } from 'node:util';
import type { ImageDescriptor } from './protocol/messages.ts';

const issued = new WeakMap<object, ImageDescriptor>();
const constructing = Symbol('ptc.image.constructing');
let registerFile: ((path: string) => Promise<ImageDescriptor>) | undefined;
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

  /** Reads a PNG, JPEG, GIF or WebP file's size on the host and returns an Image for it. */
  static async fromFile(path: string): Promise<Image> {
    if (typeof path !== 'string' || path === '') throw new TypeError(`Image.fromFile expects a file path, got ${utilInspect(path)}`);
    if (registerFile === undefined) throw new Error('Image.fromFile is not available outside a run');
    return createImage(await registerFile(path));
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
export function setImageRegistrar(register: (path: string) => Promise<ImageDescriptor>): void {
  registerFile = register;
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
