// The node-script bootstrap: embedded in the binary as a SEA asset, read from dist/ when ptc
// runs from source, or from the installed package, which ships it next to the library.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { isSea, getAsset } from 'node:sea';

export const BOOTSTRAP_ASSET = 'bootstrap.mjs';

/** Defined by build/library.ts: the package's bootstrap, relative to the bundled library. */
declare const PTC_PACKAGE_CARRIER: string | undefined;

/**
 * Where the bootstrap comes from outside the binary: the installed package's copy, or from source
 * the build's output, which is what a build embeds.
 */
const BUILT_BOOTSTRAP = fileURLToPath(new URL(typeof PTC_PACKAGE_CARRIER === 'string' ? PTC_PACKAGE_CARRIER : '../../dist/bootstrap.mjs', import.meta.url));

/** The bootstrap file's text. */
export async function readBootstrap(): Promise<string> {
  if (isSea()) return getAsset(BOOTSTRAP_ASSET, 'utf8');
  try {
    return await readFile(BUILT_BOOTSTRAP, 'utf8');
  } catch (error) {
    throw new Error(`no bootstrap at ${BUILT_BOOTSTRAP}: run "npm run build" first`, { cause: error });
  }
}

/** The bootstrap's identity, so a copy elsewhere can be checked against it (`sha256sum bootstrap.mjs`). */
export type BootstrapIdentity =
  | { sha256: string; source: 'embedded' }
  | { sha256: string; source: 'built'; path: string }
  | { sha256: null; source: 'not-built'; path: string };

/** The SHA-256 of the embedded bootstrap's bytes, or from source, of dist/bootstrap.mjs if built. */
export async function bootstrapIdentity(): Promise<BootstrapIdentity> {
  if (isSea()) return { sha256: sha256(new Uint8Array(getAsset(BOOTSTRAP_ASSET))), source: 'embedded' };
  let bytes: Buffer;
  try {
    bytes = await readFile(BUILT_BOOTSTRAP);
  } catch {
    return { sha256: null, source: 'not-built', path: BUILT_BOOTSTRAP };
  }
  return { sha256: sha256(bytes), source: 'built', path: BUILT_BOOTSTRAP };
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
