// Just enough of the PE32+ format to ship the Windows binary built on Linux: drop Node's
// Authenticode signature, which the injected resource makes invalid (what `signtool remove /s`
// does: clear the certificate table and cut it off the end of the file), and find a named
// RT_RCDATA resource, where Node looks for the SEA blob (the release tests read it back).

export class PEError extends Error {}

const RT_RCDATA = 10;
const DIR_RESOURCE = 2;
const DIR_CERTIFICATE = 4;

export interface PEHeaders {
  machine: number;
  /** Offset of the optional header's data directories. */
  directories: number;
  directoryCount: number;
  sections: { name: string; virtualAddress: number; virtualSize: number; rawSize: number; rawOffset: number }[];
}

/** The PE32+ headers of `buf`, bounds-checked. */
export function peHeaders(buf: Buffer): PEHeaders {
  if (buf.length < 64 || buf.toString('latin1', 0, 2) !== 'MZ') throw new PEError('not a PE file (no MZ header)');
  const pe = buf.readUInt32LE(0x3c);
  if (pe + 24 > buf.length || buf.toString('latin1', pe, pe + 4) !== 'PE\0\0') throw new PEError('no PE signature');
  const sectionCount = buf.readUInt16LE(pe + 6);
  const optional = pe + 24;
  const optionalSize = buf.readUInt16LE(pe + 20);
  if (optional + optionalSize > buf.length || buf.readUInt16LE(optional) !== 0x20b) throw new PEError('not a PE32+ (64-bit) image');
  const table = optional + optionalSize;
  if (table + sectionCount * 40 > buf.length) throw new PEError('the section table runs past the end of the file');
  const sections = [];
  for (let i = 0, at = table; i < sectionCount; i++, at += 40) {
    sections.push({
      name: buf.toString('latin1', at, at + 8).replace(/\0.*$/s, ''),
      virtualSize: buf.readUInt32LE(at + 8),
      virtualAddress: buf.readUInt32LE(at + 12),
      rawSize: buf.readUInt32LE(at + 16),
      rawOffset: buf.readUInt32LE(at + 20),
    });
  }
  return { machine: buf.readUInt16LE(pe + 4), directories: optional + 112, directoryCount: buf.readUInt32LE(optional + 108), sections };
}

function directory(buf: Buffer, headers: PEHeaders, index: number): { at: number; address: number; size: number } {
  if (index >= headers.directoryCount) return { at: -1, address: 0, size: 0 };
  const at = headers.directories + index * 8;
  return { at, address: buf.readUInt32LE(at), size: buf.readUInt32LE(at + 4) };
}

/** The image without its Authenticode signature (the same buffer when it has none). */
export function stripSignature(input: Buffer): Buffer {
  const headers = peHeaders(input);
  const cert = directory(input, headers, DIR_CERTIFICATE);
  if (cert.size === 0) return input;
  // Unlike other directories, the certificate table's address is a file offset. Signing tools
  // put it at the end of the file; anywhere else, cutting the file would cut something else.
  if (cert.address + cert.size !== input.length) {
    throw new PEError(`the certificate table (${cert.size} bytes at ${cert.address}) is not at the end of the file (${input.length})`);
  }
  const buf = Buffer.from(input.subarray(0, cert.address));
  buf.writeUInt32LE(0, cert.at);
  buf.writeUInt32LE(0, cert.at + 4);
  return buf;
}

/** Whether the image has an Authenticode signature (a non-empty certificate table). */
export const hasSignature = (buf: Buffer): boolean => directory(buf, peHeaders(buf), DIR_CERTIFICATE).size > 0;

/** The bytes of the RT_RCDATA resource called `name` (as FindResource looks it up), if any. */
export function rcdataResource(buf: Buffer, name: string): Buffer | undefined {
  const headers = peHeaders(buf);
  const resources = directory(buf, headers, DIR_RESOURCE);
  if (resources.size === 0) return undefined;
  const toOffset = (rva: number): number => {
    const s = headers.sections.find((x) => rva >= x.virtualAddress && rva < x.virtualAddress + Math.max(x.virtualSize, x.rawSize));
    if (!s) throw new PEError(`RVA 0x${rva.toString(16)} is in no section`);
    return s.rawOffset + rva - s.virtualAddress;
  };
  const base = toOffset(resources.address);
  const entries = (dir: number): { id: number | string; target: number; isDir: boolean }[] => {
    const count = buf.readUInt16LE(base + dir + 12) + buf.readUInt16LE(base + dir + 14);
    const list = [];
    for (let i = 0, at = base + dir + 16; i < count; i++, at += 8) {
      const raw = buf.readUInt32LE(at);
      const target = buf.readUInt32LE(at + 4);
      const nameAt = base + (raw & 0x7fffffff);
      const id = raw & 0x80000000 ? buf.toString('utf16le', nameAt + 2, nameAt + 2 + buf.readUInt16LE(nameAt) * 2) : raw;
      list.push({ id, target: target & 0x7fffffff, isDir: (target & 0x80000000) !== 0 });
    }
    return list;
  };
  const type = entries(0).find((e) => e.id === RT_RCDATA && e.isDir);
  const named = type && entries(type.target).find((e) => e.id === name && e.isDir);
  const language = named && entries(named.target)[0];
  if (!language || language.isDir) return undefined;
  const data = base + language.target;
  const offset = toOffset(buf.readUInt32LE(data));
  return buf.subarray(offset, offset + buf.readUInt32LE(data + 4));
}
