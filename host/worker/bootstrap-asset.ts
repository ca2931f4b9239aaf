// The node-script bootstrap: embedded in the binary as a SEA asset, read from dist/ when ptc
// runs from source, or from the installed package, which ships it next to the library.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { isSea, getAsset } from 'node:sea';

export const BOOTSTRAP_ASSET = 'bootstrap.mjs';

/** Defined by build/library.ts: the package's bootstrap, relative to the bundled library. */
declare const PTC_PACKAGE_CARRIER: string | undefined;

/** The bootstrap file's text. */
export async function readBootstrap(): Promise<string> {
  if (isSea()) return getAsset(BOOTSTRAP_ASSET, 'utf8');
  const path = fileURLToPath(new URL(typeof PTC_PACKAGE_CARRIER === 'string' ? PTC_PACKAGE_CARRIER : '../../dist/bootstrap.mjs', import.meta.url));
  try {
    return await readFile(path, 'utf8');
  } catch {
    throw new Error(`no bootstrap at ${path}: run "npm run build" first`);
  }
}
