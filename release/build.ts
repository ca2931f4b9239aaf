// Release artifacts: runs the build, then copies the executable and the carrier
// bootstrap into release/out/ and writes release/out/SHA256SUMS (`sha256sum -c` format).
// linux-x64 only for now: the executable is built from this machine's pinned Node.
//
//   node release/build.ts [--entry FILE] [--bootstrap-entry FILE]

import { createHash } from 'node:crypto';
import { createReadStream, copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build, BuildError } from '../build/build.ts';

const OUT = resolve(import.meta.dirname, 'out');

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const { values } = parseArgs({ options: { entry: { type: 'string' }, 'bootstrap-entry': { type: 'string' } } });
try {
  if (`${process.platform}-${process.arch}` !== 'linux-x64') {
    throw new BuildError(`release builds are linux-x64 only for now (this is ${process.platform}-${process.arch})`);
  }
  const result = await build({ entry: values.entry, bootstrapEntry: values['bootstrap-entry'] });
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const artifacts: [string, string][] = [
    [result.binary, `ptc-${result.ptcVersion}-linux-x64`],
    [result.bootstrap, 'bootstrap.mjs'],
  ];
  const lines: string[] = [];
  for (const [src, name] of artifacts) {
    copyFileSync(src, join(OUT, name));
    lines.push(`${await sha256(join(OUT, name))}  ${name}`);
  }
  writeFileSync(join(OUT, 'SHA256SUMS'), lines.join('\n') + '\n');
  console.log(`release: ${relative(process.cwd(), OUT)}/\n${lines.map((l) => `  ${l}`).join('\n')}`);
} catch (err) {
  console.error(`release failed: ${err instanceof BuildError ? err.message : ((err as Error).stack ?? String(err))}`);
  process.exitCode = 1;
}
