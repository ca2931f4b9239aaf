// The import policy's flags, shared by run, repl, serve and mcp: laid over the `imports` field of
// a configuration read from elsewhere. Relative files are resolved from the current directory.
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { UsageError } from './usage-error.ts';

/** The import flags, on a command. */
export function importOptions(command: Argv): Argv {
  return command
    .option('deny-import', { type: 'string', array: true, nargs: 1, requiresArg: true, describe: 'Keep programs from importing this specifier or pattern (repeatable): node:child_process, \'node:*\', lodash; a deny beats every other rule' })
    .option('allow-import', { type: 'string', array: true, nargs: 1, requiresArg: true, describe: 'Let programs import only what these specifiers or patterns match (repeatable), besides what --map-import maps' })
    .option('map-import', { type: 'string', array: true, nargs: 1, requiresArg: true, describe: 'SPECIFIER=FILE loads FILE for that specifier (a vendored module); SPECIFIER=bindings: makes it the run\'s bindings (repeatable)' })
    .option('import-handler', { type: 'string', requiresArg: true, describe: 'A module whose default export (a ProgramImportHandler) decides the imports no rule denies or maps' });
}

/** Lays --deny-import, --allow-import, --map-import and --import-handler over `config.imports`. */
export function applyImportFlags(config: Record<string, unknown>, args: Record<string, unknown>): void {
  const deny = strings(args['deny-import']);
  const allow = strings(args['allow-import']);
  const maps = strings(args['map-import']);
  const handler = args['import-handler'];
  if (deny === undefined && allow === undefined && maps === undefined && handler === undefined) return;
  const base = (typeof config.imports === 'object' && config.imports !== null ? config.imports : {}) as { deny?: string[]; allow?: string[]; map?: Record<string, string> };
  const map: Record<string, string> = { ...base.map };
  for (const entry of maps ?? []) {
    const at = entry.indexOf('=');
    if (at <= 0 || at === entry.length - 1) throw new UsageError(`--map-import takes SPECIFIER=FILE or SPECIFIER=bindings:[namespace], got ${JSON.stringify(entry)}`);
    const target = entry.slice(at + 1);
    map[entry.slice(0, at)] = target.startsWith('bindings:') ? target : resolve(target);
  }
  config.imports = {
    ...base,
    ...(deny !== undefined ? { deny: [...(base.deny ?? []), ...deny] } : {}),
    ...(allow !== undefined ? { allow: [...(base.allow ?? []), ...allow] } : {}),
    ...(maps !== undefined ? { map } : {}),
    ...(typeof handler === 'string' ? { handler: resolve(handler) } : {}),
  };
}

function strings(value: unknown): string[] | undefined {
  return value === undefined ? undefined : (value as unknown[]).map(String);
}
