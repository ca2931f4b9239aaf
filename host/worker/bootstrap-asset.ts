// The node-script bootstrap: embedded in the binary as a SEA asset, or read from dist/ when ptc
// runs from source.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { isSea, getAsset } from 'node:sea';

export const BOOTSTRAP_ASSET = 'bootstrap.mjs';

/** The bootstrap file's text. */
export async function readBootstrap(): Promise<string> {
  if (isSea()) return getAsset(BOOTSTRAP_ASSET, 'utf8');
  const path = fileURLToPath(new URL('../../dist/bootstrap.mjs', import.meta.url));
  try {
    return await readFile(path, 'utf8');
  } catch {
    throw new Error(`no bootstrap at ${path}: run "npm run build" first`);
  }
}
