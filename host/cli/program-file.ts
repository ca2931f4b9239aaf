// Reading `ptc run`'s program: a file, or stdin with `-` (or with no file while stdin is not a
// terminal). One reader for the ordinary path (cli.ts) and the resident pool's fast path
// (resident-client.ts), so both run the same text under the same name.
import { readFileSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { UsageError } from './usage-error.ts';

/** The program's text and the filename its stack frames carry; a UsageError says why there is none. */
export async function readProgram(file: string | undefined): Promise<{ source: string; filename: string }> {
  if (file === undefined || file === '-' || file === '') {
    if (file === undefined && process.stdin.isTTY) throw new UsageError('no program: pass a file, or - to read stdin');
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return { source: Buffer.concat(chunks).toString('utf8'), filename: '[stdin]' };
  }
  try {
    return { source: readFileSync(file, 'utf8'), filename: resolvePath(file) };
  } catch (error) {
    throw new UsageError(`cannot read program ${JSON.stringify(file)}: ${(error as Error).message}`);
  }
}
