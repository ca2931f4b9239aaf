// Which kind of executable a Node binary is, read from its header: the injection step needs the
// container format (ELF, PE or Mach-O decide where the SEA blob goes), and the release and its
// tests check that each binary is built for the architecture its name says.

export type ExecutableFormat = 'elf' | 'pe' | 'macho';
export type ExecutableArch = 'x64' | 'arm64';

export interface ExecutableKind {
  format: ExecutableFormat;
  arch: ExecutableArch;
}

export class ExecutableFormatError extends Error {}

const ELF_MACHINE: Record<number, ExecutableArch> = { 0x3e: 'x64', 0xb7: 'arm64' };
const PE_MACHINE: Record<number, ExecutableArch> = { 0x8664: 'x64', 0xaa64: 'arm64' };
const MACHO_CPU: Record<number, ExecutableArch> = { 0x01000007: 'x64', 0x0100000c: 'arm64' };
const MACHO_MAGIC_64 = 0xfeedfacf;
const MACHO_FAT_MAGIC = 0xcafebabe;

/** The format and architecture of the executable whose first bytes (at least 4 KiB) are `head`. */
export function executableKind(head: Buffer, name: string): ExecutableKind {
  if (head.length >= 20 && head.readUInt32BE(0) === 0x7f454c46) {
    if (head[4] !== 2 || head[5] !== 1) throw new ExecutableFormatError(`${name} is an ELF file but not 64-bit little-endian`);
    return { format: 'elf', arch: known(ELF_MACHINE, head.readUInt16LE(18), name, 'ELF machine') };
  }
  if (head.length >= 64 && head.toString('latin1', 0, 2) === 'MZ') {
    const pe = head.readUInt32LE(0x3c);
    if (pe + 6 > head.length || head.toString('latin1', pe, pe + 4) !== 'PE\0\0') {
      throw new ExecutableFormatError(`${name} starts with MZ but has no PE header`);
    }
    return { format: 'pe', arch: known(PE_MACHINE, head.readUInt16LE(pe + 4), name, 'PE machine') };
  }
  if (head.length >= 8 && head.readUInt32LE(0) === MACHO_MAGIC_64) {
    return { format: 'macho', arch: known(MACHO_CPU, head.readUInt32LE(4), name, 'Mach-O CPU type') };
  }
  if (head.length >= 4 && head.readUInt32BE(0) === MACHO_FAT_MAGIC) {
    throw new ExecutableFormatError(`${name} is a universal (fat) Mach-O binary; give the Node of one architecture`);
  }
  throw new ExecutableFormatError(`${name} is not an executable ptc can build from (not ELF, PE or 64-bit Mach-O)`);
}

function known(table: Record<number, ExecutableArch>, value: number, name: string, what: string): ExecutableArch {
  const arch = table[value];
  if (!arch) throw new ExecutableFormatError(`${name} has ${what} 0x${value.toString(16)}, neither x64 nor arm64`);
  return arch;
}
