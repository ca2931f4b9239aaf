// The carrier's OS environment keeps only what nested processes and temp files need; the program
// sees an empty process.env, also through `import { env } from 'node:process'`.
import { syncBuiltinESMExports } from 'node:module';
import { CARRIER_SELECTOR } from './protocol/revision.ts';

const KEPT = new Set(['PATH', 'TMPDIR', 'TMP', 'TEMP']);

/** Removes the carrier selector and every variable but PATH and temp paths; gives the program `{}`. */
export function scrubEnvironment(): void {
  delete process.env[CARRIER_SELECTOR];
  for (const name of Object.keys(process.env)) {
    if (!KEPT.has(name)) delete process.env[name];
  }
  Object.defineProperty(process, 'env', { value: {}, writable: true, configurable: true, enumerable: true });
  syncBuiltinESMExports();
}
