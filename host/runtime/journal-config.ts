// The journal's path: a file the user names, resolved against the host's cwd when relative.
import { resolve as resolvePath } from 'node:path';
import { show } from '../../wire/show.ts';

export function resolveJournalPath(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || value.includes('\0')) throw new TypeError(`ptc config: journal must be a file path, got ${show(value)}`);
  return resolvePath(value);
}
