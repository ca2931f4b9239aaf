// A minimal ZIP writer for the release's wheels: deflate or stored entries, UTF-8 names, Unix
// modes, one fixed timestamp (1980-01-01, the format's first day) so the same inputs give the same
// bytes. Node's zlib does the compression and the CRC; nothing else is needed, so a wheel builds
// on an offline machine. No ZIP64: an entry or archive past 4 GiB is refused.

import { closeSync, openSync, writeSync } from 'node:fs';
import { crc32, deflateRawSync } from 'node:zlib';

export interface ZipEntry {
  /** The path inside the archive, `/`-separated, never starting with `/`. */
  name: string;
  data: Buffer;
  /** Unix permission bits (0o644 for files, 0o755 for executables). */
  mode: number;
}

export class ZipError extends Error {}

const LIMIT = 0xffff_ffff;
const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const END_OF_CENTRAL = 0x06054b50;
const VERSION = 20;
/** Made by Unix (3), so readers take the external attributes as a mode. */
const MADE_BY = (3 << 8) | VERSION;
const UTF8_NAMES = 0x0800;
const DEFLATE = 8;
const STORED = 0;
/** 1980-01-01 00:00:00 in MS-DOS date and time fields. */
const DOS_DATE = (0 << 9) | (1 << 5) | 1;
const DOS_TIME = 0;

function checkName(name: string): void {
  if (!name || name.startsWith('/') || name.includes('\\') || name.split('/').some((part) => part === '' || part === '.' || part === '..')) {
    throw new ZipError(`bad zip entry name ${JSON.stringify(name)}`);
  }
}

/** Writes `entries`, in order, to a new ZIP file at `path`. */
export function writeZip(path: string, entries: readonly ZipEntry[]): void {
  const fd = openSync(path, 'w', 0o644);
  try {
    let offset = 0;
    const write = (buf: Buffer): void => {
      for (let done = 0; done < buf.length; ) done += writeSync(fd, buf, done);
      offset += buf.length;
    };
    const central: Buffer[] = [];
    for (const entry of entries) {
      checkName(entry.name);
      if (entry.data.length > LIMIT) throw new ZipError(`${entry.name} is ${entry.data.length} bytes, past what a zip without ZIP64 holds`);
      const deflated = deflateRawSync(entry.data, { level: 6 });
      const [method, body] = deflated.length < entry.data.length ? [DEFLATE, deflated] : [STORED, entry.data];
      const name = Buffer.from(entry.name, 'utf8');
      const crc = crc32(entry.data) >>> 0;
      if (offset > LIMIT) throw new ZipError(`${path} passes 4 GiB at ${entry.name}`);
      // The fields both headers share, from "version needed" to the name's length.
      const common = (header: Buffer, at: number): void => {
        header.writeUInt16LE(VERSION, at);
        header.writeUInt16LE(UTF8_NAMES, at + 2);
        header.writeUInt16LE(method, at + 4);
        header.writeUInt16LE(DOS_TIME, at + 6);
        header.writeUInt16LE(DOS_DATE, at + 8);
        header.writeUInt32LE(crc, at + 10);
        header.writeUInt32LE(body.length, at + 14);
        header.writeUInt32LE(entry.data.length, at + 18);
        header.writeUInt16LE(name.length, at + 22);
      };
      const local = Buffer.alloc(30);
      local.writeUInt32LE(LOCAL_HEADER, 0);
      common(local, 4);
      const header = Buffer.alloc(46);
      header.writeUInt32LE(CENTRAL_HEADER, 0);
      header.writeUInt16LE(MADE_BY, 4);
      common(header, 6);
      // Regular file (S_IFREG) with its permission bits, in the high half of the external attributes.
      header.writeUInt32LE(((0o100000 | (entry.mode & 0o777)) << 16) >>> 0, 38);
      header.writeUInt32LE(offset, 42);
      central.push(header, name);
      write(local);
      write(name);
      write(body);
    }
    const start = offset;
    for (const part of central) write(part);
    if (offset > LIMIT || entries.length > 0xffff) throw new ZipError(`${path} needs ZIP64 (${entries.length} entries, ${offset} bytes)`);
    const end = Buffer.alloc(22);
    end.writeUInt32LE(END_OF_CENTRAL, 0);
    end.writeUInt16LE(entries.length, 8);
    end.writeUInt16LE(entries.length, 10);
    end.writeUInt32LE(offset - start, 12);
    end.writeUInt32LE(start, 16);
    write(end);
  } finally {
    closeSync(fd);
  }
}
