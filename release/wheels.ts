// The Python wheels: `ptc_client-<v>-py3-none-any.whl`, the client alone, and for each platform
// binary `ptc-<v>-py3-none-<platform>.whl`, the client plus the executable as a script, so that
// one `pip install --no-index ptc-….whl` puts both on the machine (the way ruff and uv ship
// theirs: pip copies `<name>.data/scripts/*` into the environment's bin or Scripts directory).
// Everything is written here, with no build backend, index or network: a wheel is a zip with
// METADATA, WHEEL and RECORD (PEP 427, PEP 491).
//
//   node release/wheels.ts [--out DIR] [--binary FILE]   # the pure wheel and this machine's, from dist/ptc (or FILE)
//
// The platform tag comes from the binary itself: the highest glibc symbol version it needs
// (manylinux_2_N), the macOS version its LC_BUILD_VERSION names (rounded up to a major release,
// the only kind pip matches from macOS 11 on), win_amd64 for Windows. A wheel then never installs
// where its binary cannot start.

import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BuildError } from '../build/errors.ts';
import { executableKind } from '../build/executable-format.ts';
import { loadCommands } from '../build/macho.ts';
import { writeZip, type ZipEntry } from './zip.ts';

const ROOT = resolve(import.meta.dirname, '..');
const CLIENT = join(ROOT, 'clients', 'python');
const LC_BUILD_VERSION = 0x32;

/** The client's distribution version, from clients/python/pyproject.toml's [project] table. */
export function clientVersion(): string {
  const text = readFileSync(join(CLIENT, 'pyproject.toml'), 'utf8');
  const project = /^\[project\]\n([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(text)?.[1] ?? '';
  const version = /^version\s*=\s*"([^"]+)"/m.exec(project)?.[1];
  if (!version) throw new BuildError('clients/python/pyproject.toml names no [project] version');
  return version;
}

/** The client's package files (ptc_client/*.py and py.typed), as wheel entries. */
function clientFiles(): ZipEntry[] {
  const dir = join(CLIENT, 'src', 'ptc_client');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.py') || name === 'py.typed')
    .sort()
    .map((name) => ({ name: `ptc_client/${name}`, data: readFileSync(join(dir, name)), mode: 0o644 }));
}

/** The highest `GLIBC_2.N` among the version names in an ELF file's .dynstr section. */
export function glibcNeeded(elf: Buffer): number {
  const sectionsAt = Number(elf.readBigUInt64LE(0x28));
  const size = elf.readUInt16LE(0x3a);
  const count = elf.readUInt16LE(0x3c);
  const names = sectionsAt + elf.readUInt16LE(0x3e) * size;
  const namesAt = Number(elf.readBigUInt64LE(names + 0x18));
  for (let i = 0; i < count; i++) {
    const at = sectionsAt + i * size;
    const nameAt = namesAt + elf.readUInt32LE(at);
    if (elf.toString('latin1', nameAt, nameAt + 8) !== '.dynstr\0') continue;
    const offset = Number(elf.readBigUInt64LE(at + 0x18));
    const text = elf.toString('latin1', offset, offset + Number(elf.readBigUInt64LE(at + 0x20)));
    const minors = [...text.matchAll(/(?<=\0)GLIBC_2\.(\d+)(?=\0)/g)].map((m) => Number(m[1]));
    if (!minors.length) throw new BuildError('the binary names no GLIBC_2.* version: not a glibc build');
    return Math.max(...minors);
  }
  throw new BuildError('the binary has no .dynstr section');
}

/** The macOS release a Mach-O file's LC_BUILD_VERSION requires, as [major, minor]. */
export function macosNeeded(macho: Buffer): [number, number] {
  const command = loadCommands(macho).find((c) => c.cmd === LC_BUILD_VERSION);
  if (!command) throw new BuildError('the binary has no LC_BUILD_VERSION load command');
  const minos = macho.readUInt32LE(command.offset + 12);
  return [minos >>> 16, (minos >>> 8) & 0xff];
}

/** The wheel platform tag for a ptc binary, and the name its script has. */
export function platformOf(binary: Buffer, name: string): { tag: string; script: string } {
  const kind = executableKind(binary.subarray(0, 4096), name);
  const machine = kind.arch === 'x64' ? 'x86_64' : kind.arch === 'arm64' ? 'aarch64' : '';
  if (kind.format === 'elf') return { tag: `manylinux_2_${glibcNeeded(binary)}_${machine}`, script: 'ptc' };
  if (kind.format === 'macho') {
    const [major, minor] = macosNeeded(binary);
    // From macOS 11 on, pip offers only `macosx_<major>_0` tags: a binary that needs 13.5 must
    // claim 14.0, or pip would install it on 13.0 where it cannot start.
    const release = major >= 11 && minor > 0 ? major + 1 : major;
    return { tag: `macosx_${release}_${major >= 11 ? 0 : minor}_${kind.arch === 'x64' ? 'x86_64' : 'arm64'}`, script: 'ptc' };
  }
  if (kind.arch !== 'x64') throw new BuildError(`${name}: no wheel tag for Windows on ${kind.arch}`);
  return { tag: 'win_amd64', script: 'ptc.exe' };
}

function metadata(name: string, version: string, summary: string): Buffer {
  const readme = readFileSync(join(CLIENT, 'README.md'), 'utf8');
  return Buffer.from(
    [
      'Metadata-Version: 2.1',
      `Name: ${name}`,
      `Version: ${version}`,
      `Summary: ${summary}`,
      'License: MIT',
      'Requires-Python: >=3.9',
      'Classifier: Typing :: Typed',
      'Classifier: Programming Language :: Python :: 3',
      'Description-Content-Type: text/markdown',
      '',
      readme,
    ].join('\n'),
  );
}

function wheelFile(tag: string, purelib: boolean): Buffer {
  return Buffer.from(['Wheel-Version: 1.0', 'Generator: ptc release/wheels.ts', `Root-Is-Purelib: ${purelib}`, `Tag: ${tag}`, ''].join('\n'));
}

const digest = (data: Buffer): string => createHash('sha256').update(data).digest('base64url');

/** Writes one wheel: `files`, then the dist-info files with a RECORD of everything. */
function writeWheel(out: string, file: string, distInfo: string, files: ZipEntry[], meta: Buffer, wheel: Buffer): string {
  const entries = [...files, { name: `${distInfo}/METADATA`, data: meta, mode: 0o644 }, { name: `${distInfo}/WHEEL`, data: wheel, mode: 0o644 }];
  for (const entry of entries) if (/[",\r\n]/.test(entry.name)) throw new BuildError(`wheel entry ${JSON.stringify(entry.name)} cannot go into RECORD unquoted`);
  const record = [...entries.map((e) => `${e.name},sha256=${digest(e.data)},${e.data.length}`), `${distInfo}/RECORD,,`, ''].join('\n');
  entries.push({ name: `${distInfo}/RECORD`, data: Buffer.from(record), mode: 0o644 });
  const path = join(out, file);
  writeZip(path, entries);
  return path;
}

/** The client alone: `ptc_client-<v>-py3-none-any.whl`. Returns its path. */
export function writeClientWheel(out: string): string {
  const version = clientVersion();
  const distInfo = `ptc_client-${version}.dist-info`;
  const summary = 'Drive ptc (sandboxed TypeScript programs for AI agents) from Python through `ptc serve`';
  return writeWheel(out, `ptc_client-${version}-py3-none-any.whl`, distInfo, clientFiles(), metadata('ptc-client', version, summary), wheelFile('py3-none-any', true));
}

/** The client and the executable at `binary` (ptc `version`): `ptc-<v>-py3-none-<platform>.whl`. */
export function writePlatformWheel(out: string, binary: string, version: string): string {
  const client = clientVersion();
  if (client !== version) throw new BuildError(`the Python client is version ${client} (clients/python/pyproject.toml) but ptc is ${version} (package.json): make them equal`);
  const bytes = readFileSync(binary);
  const { tag, script } = platformOf(bytes, basename(binary));
  const summary = 'ptc, the runtime for model-written TypeScript programs, with its Python client';
  const files = [...clientFiles(), { name: `ptc-${version}.data/scripts/${script}`, data: bytes, mode: 0o755 }];
  return writeWheel(out, `ptc-${version}-py3-none-${tag}.whl`, `ptc-${version}.dist-info`, files, metadata('ptc', version, summary), wheelFile(`py3-none-${tag}`, false));
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(import.meta.filename)) {
  const { values } = parseArgs({ options: { out: { type: 'string' }, binary: { type: 'string' } } });
  const out = resolve(values.out ?? join(ROOT, 'dist', 'wheels'));
  try {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    mkdirSync(out, { recursive: true });
    for (const path of [writeClientWheel(out), writePlatformWheel(out, resolve(values.binary ?? join(ROOT, 'dist', 'ptc')), version)]) console.log(path);
  } catch (err) {
    console.error(`wheels failed: ${err instanceof BuildError ? err.message : ((err as Error).stack ?? String(err))}`);
    process.exitCode = 1;
  }
}
