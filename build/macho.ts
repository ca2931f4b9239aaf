// Just enough of the 64-bit Mach-O format to ship a macOS binary built on Linux: list the load
// commands and segments (the release tests read them), and remove the code signature, which the
// injected NODE_SEA segment makes invalid. macOS refuses a binary whose signature does not match
// and there is no `codesign` on Linux, so the build does what `codesign --remove-signature` does:
// drop LC_CODE_SIGNATURE and cut the signature off the end of __LINKEDIT. The Mac user signs the
// result again with `codesign --sign -` (see release/README.md).

const MAGIC_64 = 0xfeedfacf;
const HEADER_SIZE = 32;
export const LC_SEGMENT_64 = 0x19;
export const LC_CODE_SIGNATURE = 0x1d;

export class MachOError extends Error {}

export interface LoadCommand {
  cmd: number;
  offset: number;
  size: number;
}

export interface Segment {
  name: string;
  offset: number;
  fileoff: number;
  filesize: number;
  vmsize: number;
  sections: { name: string; offset: number; size: number }[];
}

const cString = (buf: Buffer, at: number): string => buf.toString('latin1', at, at + 16).replace(/\0.*$/s, '');

/** The load commands of a thin 64-bit little-endian Mach-O image, bounds-checked. */
export function loadCommands(buf: Buffer): LoadCommand[] {
  if (buf.length < HEADER_SIZE || buf.readUInt32LE(0) !== MAGIC_64) throw new MachOError('not a 64-bit little-endian Mach-O file');
  const count = buf.readUInt32LE(16);
  const end = HEADER_SIZE + buf.readUInt32LE(20);
  if (end > buf.length) throw new MachOError(`load commands end at ${end}, past the end of the file (${buf.length})`);
  const commands: LoadCommand[] = [];
  for (let i = 0, at = HEADER_SIZE; i < count; i++) {
    if (at + 8 > end) throw new MachOError(`load command ${i} of ${count} starts past the load commands' end`);
    const size = buf.readUInt32LE(at + 4);
    if (size < 8 || at + size > end) throw new MachOError(`load command ${i} has a bad size ${size}`);
    commands.push({ cmd: buf.readUInt32LE(at), offset: at, size });
    at += size;
  }
  return commands;
}

/** The LC_SEGMENT_64 commands with their sections. */
export function segments(buf: Buffer): Segment[] {
  return loadCommands(buf)
    .filter((c) => c.cmd === LC_SEGMENT_64)
    .map(({ offset }) => {
      const sections = [];
      for (let i = 0, at = offset + 72; i < buf.readUInt32LE(offset + 64); i++, at += 80) {
        sections.push({ name: cString(buf, at), offset: buf.readUInt32LE(at + 48), size: Number(buf.readBigUInt64LE(at + 40)) });
      }
      return {
        name: cString(buf, offset + 8),
        offset,
        vmsize: Number(buf.readBigUInt64LE(offset + 32)),
        fileoff: Number(buf.readBigUInt64LE(offset + 40)),
        filesize: Number(buf.readBigUInt64LE(offset + 48)),
        sections,
      };
    });
}

/** The image without its code signature (the same buffer when it has none). */
export function stripCodeSignature(input: Buffer): Buffer {
  const signature = loadCommands(input).find((c) => c.cmd === LC_CODE_SIGNATURE);
  if (!signature) return input;
  const buf = Buffer.from(input);
  const dataoff = buf.readUInt32LE(signature.offset + 8);
  const datasize = buf.readUInt32LE(signature.offset + 12);
  const linkedit = segments(buf).find((s) => s.name === '__LINKEDIT');
  if (linkedit === undefined) throw new MachOError('the image has a code signature but no __LINKEDIT segment');
  // The signature is the last thing in __LINKEDIT and in the file (where codesign puts it); if it
  // is not, cutting the file would cut something else.
  if (dataoff < linkedit.fileoff || dataoff + datasize !== linkedit.fileoff + linkedit.filesize || dataoff + datasize > buf.length) {
    throw new MachOError(`the code signature (${datasize} bytes at ${dataoff}) is not at the end of __LINKEDIT`);
  }
  // Remove the command: the later ones move up over it and the freed tail is zeroed.
  const commandsEnd = HEADER_SIZE + buf.readUInt32LE(20);
  buf.copy(buf, signature.offset, signature.offset + signature.size, commandsEnd);
  buf.fill(0, commandsEnd - signature.size, commandsEnd);
  buf.writeUInt32LE(buf.readUInt32LE(16) - 1, 16);
  buf.writeUInt32LE(buf.readUInt32LE(20) - signature.size, 20);
  // __LINKEDIT now ends where the signature began (found again: its command may have moved up).
  const moved = segments(buf).find((s) => s.name === '__LINKEDIT') as Segment;
  const page = buf.readUInt32LE(4) === 0x0100000c ? 0x4000 : 0x1000;
  const filesize = dataoff - linkedit.fileoff;
  buf.writeBigUInt64LE(BigInt(filesize), moved.offset + 48);
  buf.writeBigUInt64LE(BigInt(Math.ceil(filesize / page) * page), moved.offset + 32);
  return buf.subarray(0, dataoff);
}
