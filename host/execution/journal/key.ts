// The key that signs a journal's rows. Each row the host writes carries an HMAC-SHA256 tag over
// its fields under a key of 32 random bytes that lives outside the journal, in the user's state
// directory (journalKeyDirectory: 0700, the key 0600), one key per journal named by the SHA-256 of
// the journal's real path. Every sandbox hides that directory (bwrap mounts an empty tmpfs over
// it; node-permission grants no read there), and a runtime with a journal refuses a run whose
// writable roots contain it. So a program that could write the journal file, even at some time
// before, cannot make a row that verifies: resume(), revert(), runs(), calls() and the snippets
// refuse a row whose tag does not match. Moving a journal file to another path orphans its key.
import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { journalKeyDirectory, makePrivateDirectory } from '../../sandbox/private-directory.ts';

const KEY_BYTES = 32;

/** The key file of the journal whose real path is `journalPath`. */
export function journalKeyFile(journalPath: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(journalKeyDirectory(env), `${createHash('sha256').update(journalPath).digest('hex')}.key`);
}

/** Reads the journal's key, making it (and its private directory) when there is none yet. */
export function journalKey(journalPath: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  const directory = journalKeyDirectory(env);
  if (!makePrivateDirectory(directory)) {
    throw new Error(`ptc journal: cannot keep the key of ${JSON.stringify(journalPath)} in ${JSON.stringify(directory)}: it is not a directory private to this user (uid ${process.getuid?.()})`);
  }
  const file = journalKeyFile(journalPath, env);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`ptc journal: cannot read the key ${JSON.stringify(file)}: ${(error as Error).message}`, { cause: error });
    return makeKey(file);
  }
  try {
    const stats = fstatSync(fd);
    const uid = process.getuid?.();
    if (!stats.isFile() || (uid !== undefined && stats.uid !== uid) || (stats.mode & 0o077) !== 0 || stats.size !== KEY_BYTES) {
      throw new Error(`ptc journal: the key ${JSON.stringify(file)} is not a ${KEY_BYTES}-byte file private to this user (uid ${stats.uid}, mode ${(stats.mode & 0o777).toString(8)}, ${stats.size} bytes)`);
    }
    const key = Buffer.alloc(KEY_BYTES);
    if (readSync(fd, key, 0, KEY_BYTES, 0) !== KEY_BYTES) throw new Error(`ptc journal: the key ${JSON.stringify(file)} could not be read whole`);
    return key;
  } finally {
    closeSync(fd);
  }
}

function makeKey(file: string): Buffer {
  const key = randomBytes(KEY_BYTES);
  let fd: number;
  try {
    fd = openSync(file, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    // Another process made it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return journalKeyAfterRace(file);
    throw new Error(`ptc journal: cannot make the key ${JSON.stringify(file)}: ${(error as Error).message}`, { cause: error });
  }
  try {
    writeSync(fd, key);
  } finally {
    closeSync(fd);
  }
  return key;
}

function journalKeyAfterRace(file: string): Buffer {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const key = Buffer.alloc(KEY_BYTES);
    if (readSync(fd, key, 0, KEY_BYTES, 0) !== KEY_BYTES) throw new Error(`ptc journal: the key ${JSON.stringify(file)} is being written by another process; try again`);
    return key;
  } finally {
    closeSync(fd);
  }
}

/** The tag of one row: HMAC-SHA256 over its fields, in a fixed order, as JSON. */
export function rowTag(key: Buffer, fields: Array<string | number | null>): string {
  return createHmac('sha256', key).update(JSON.stringify(fields)).digest('hex');
}
