// The `imports` field of the configuration: what programs may import, and what some specifiers
// load instead. Validated here into the wire's ImportPolicy, which the carrier enforces.
import { isAbsolute } from 'node:path';
import type { ImportPolicy, ImportRule } from '../../wire/import-policy.ts';
import { show } from '../../wire/show.ts';

export interface ImportsConfig {
  /** Specifiers or patterns (`*` for any run of characters) programs may not import; `fs` and `node:fs` are the same. A deny beats every other rule. */
  deny?: string[];
  /** With any allow rule, programs may import only what some allow (or map) rule matches. */
  allow?: string[];
  /** Specifier or pattern → an absolute file on the carrier's machine to load instead, or `bindings:` (the run's bindings as a module) or `bindings:NAMESPACE` (one namespace's). */
  map?: Record<string, string>;
  /** Absolute path (on the carrier's machine) of a module whose default export is a ProgramImportHandler, asked about every import no rule maps or denies. */
  handler?: string;
}

const BINDINGS = 'bindings:';
const FIELDS = ['deny', 'allow', 'map', 'handler'];

/** Validates `imports`; undefined (or nothing in it) means programs import through Node's loader unchecked. */
export function resolveImports(value: unknown, where = 'ptc config'): ImportPolicy | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`${where}: imports must be an object, got ${show(value)}`);
  const config = value as Record<string, unknown>;
  for (const field of Object.keys(config)) {
    if (!FIELDS.includes(field)) throw new TypeError(`${where}: unknown field "imports.${field}" (value ${show(config[field])})`);
  }
  const rules: ImportRule[] = [];
  for (const action of ['deny', 'allow'] as const) {
    for (const match of patterns(config[action], `${where}: imports.${action}`)) rules.push({ match, action });
  }
  const map = config.map;
  if (map !== undefined) {
    if (typeof map !== 'object' || map === null || Array.isArray(map)) throw new TypeError(`${where}: imports.map must be an object of specifier → target, got ${show(map)}`);
    for (const [match, target] of Object.entries(map)) {
      if (match === '') throw new TypeError(`${where}: imports.map has an empty specifier`);
      if (typeof target !== 'string') throw new TypeError(`${where}: imports.map[${show(match)}] must be a string, got ${show(target)}`);
      if (target.startsWith(BINDINGS)) rules.push({ match, action: 'map', bindings: target.slice(BINDINGS.length) });
      else if (isAbsolute(target)) rules.push({ match, action: 'map', file: target });
      else throw new TypeError(`${where}: imports.map[${show(match)}] must be an absolute file path or "bindings:[namespace]", got ${show(target)}`);
    }
  }
  const handler = config.handler;
  if (handler !== undefined && (typeof handler !== 'string' || !isAbsolute(handler))) {
    throw new TypeError(`${where}: imports.handler must be an absolute path, got ${show(handler)}`);
  }
  if (rules.length === 0 && handler === undefined) return undefined;
  return handler === undefined ? { rules } : { rules, handler };
}

function patterns(value: unknown, field: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string' || entry === '')) {
    throw new TypeError(`${field} must be an array of non-empty specifiers or patterns, got ${show(value)}`);
  }
  return value as string[];
}
