// Removal of a private temp directory that a program could write into. A program can leave a
// directory it made without write or search permission (chmod 0500, or 0); for any user but root,
// rm then fails with EACCES and the directory stays behind after every run. Everything in there
// belongs to the carrier's user, which is the remover's (the host's, or the relay's on the far
// side), so the remover gives its directories back their permissions and removes the tree again.
import { chmodSync, lstatSync, readdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Removes `path` and everything under it, also directories a program made unwritable. */
export async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch (error) {
    if (!deniedByPermissions(error)) throw error;
    restoreAccess(path);
    await rm(path, { recursive: true, force: true });
  }
}

/** removeTree for a host that is exiting: at once. */
export function removeTreeSync(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch (error) {
    if (!deniedByPermissions(error)) throw error;
    restoreAccess(path);
    rmSync(path, { recursive: true, force: true });
  }
}

function deniedByPermissions(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EACCES' || code === 'EPERM';
}

/** Makes every directory under `root` searchable and writable by its owner, parents first; symlinks are not followed. */
function restoreAccess(root: string): void {
  const directories = [root];
  while (directories.length > 0) {
    const directory = directories.pop()!;
    try {
      if (!lstatSync(directory).isDirectory()) continue;
      chmodSync(directory, 0o700);
      for (const entry of readdirSync(directory, { withFileTypes: true })) {
        if (entry.isDirectory()) directories.push(join(directory, entry.name));
      }
    } catch {
      // Gone meanwhile, or not ours: the removal that follows reports what is left.
    }
  }
}
