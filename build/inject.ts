// Turning a copy of a Node binary into the ptc executable: inject the SEA blob where that
// format's Node looks for it (postject: ELF note, PE resource NODE_SEA_BLOB, Mach-O segment
// NODE_SEA) and flip the SEA fuse. Mach-O and PE binaries lose their signature first
// (build/macho.ts, build/pe.ts): the injection makes it invalid, and it cannot be redone here.

import { chmodSync, copyFileSync, openSync, readFileSync, readSync, closeSync, rmSync, writeFileSync } from 'node:fs';
// @ts-expect-error postject ships no type declarations
import { inject as untypedInject } from 'postject';
import { BuildError } from './errors.ts';
import { executableKind, type ExecutableKind } from './executable-format.ts';
import { stripCodeSignature } from './macho.ts';
import { stripSignature } from './pe.ts';

const inject = untypedInject as (
  file: string,
  resourceName: string,
  data: Buffer,
  options: { sentinelFuse: string; machoSegmentName?: string; overwrite?: boolean },
) => Promise<void>;

export const SEA_RESOURCE = 'NODE_SEA_BLOB';
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
export const SEA_MACHO_SEGMENT = 'NODE_SEA';

/** The format and architecture of the executable at `file`. */
export function kindOf(file: string): ExecutableKind {
  const head = Buffer.alloc(4096);
  const fd = openSync(file, 'r');
  try {
    return executableKind(head.subarray(0, readSync(fd, head, 0, head.length, 0)), file);
  } finally {
    closeSync(fd);
  }
}

/** Copies `node` to `out` and injects `blob` into the copy; returns what kind of binary it is. */
export async function makeExecutable(node: string, blob: string, out: string): Promise<ExecutableKind> {
  const kind = kindOf(node);
  rmSync(out, { force: true });
  if (kind.format === 'macho') writeFileSync(out, stripCodeSignature(readFileSync(node)));
  else if (kind.format === 'pe') writeFileSync(out, stripSignature(readFileSync(node)));
  else copyFileSync(node, out);
  chmodSync(out, 0o755);
  // postject's ELF library warns "Can't find string offset for section name '.note...'"
  // for Node's binaries; the warnings are harmless (see Node's SEA docs), so drop them.
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!/^warning: Can't find string offset for section name/.test(String(args[0]))) warn(...args);
  };
  try {
    await inject(out, SEA_RESOURCE, readFileSync(blob), {
      sentinelFuse: SEA_FUSE,
      ...(kind.format === 'macho' ? { machoSegmentName: SEA_MACHO_SEGMENT } : {}),
    });
  } catch (err) {
    rmSync(out, { force: true });
    throw new BuildError(`postject failed to inject the blob into ${out}: ${(err as Error).message}`, { cause: err });
  } finally {
    console.warn = warn;
  }
  chmodSync(out, 0o755);
  return kind;
}
