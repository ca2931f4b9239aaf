// The import policy as it travels from the host to the carrier, and how a specifier meets its rules.
// Shared by the host (which validates the configuration) and the carrier (which enforces it).
import { isBuiltin } from 'node:module';

/** What a rule does with the specifiers it matches. */
export type ImportRule =
  | { match: string; action: 'deny' }
  | { match: string; action: 'allow' }
  /** Load this absolute file (on the carrier's machine) in place of the specifier. */
  | { match: string; action: 'map'; file: string }
  /** The module is the run's bindings: all of them (`namespace` ''), or one dotted namespace's. */
  | { match: string; action: 'map'; bindings: string };

export interface ImportPolicy {
  /** Consulted for every program import: a deny wins, then a map, then an allow; with any allow rule, an import no rule allows is denied. */
  rules: ImportRule[];
  /** Absolute path (on the carrier's machine) of a module whose default export is a ProgramImportHandler, consulted for what the rules let through unmapped. */
  handler?: string;
}

/** A builtin named without its scheme (`fs`) is the same module as `node:fs`: rules and specifiers meet in that form. */
export function canonicalSpecifier(specifier: string): string {
  return !specifier.startsWith('node:') && isBuiltin(specifier) ? `node:${specifier}` : specifier;
}

/** Whether `pattern` (an exact specifier, or one with `*` standing for any run of characters) matches `specifier`. */
export function matchesPattern(pattern: string, specifier: string): boolean {
  const canonical = canonicalSpecifier(pattern);
  if (!canonical.includes('*')) return canonical === canonicalSpecifier(specifier);
  const source = canonical.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${source}$`, 's').test(canonicalSpecifier(specifier));
}

export type RuleDecision =
  | { kind: 'deny'; rule: string }
  | { kind: 'map'; rule: ImportRule & { action: 'map' } }
  | { kind: 'pass' };

/** What the rules decide for one specifier. */
export function decideByRules(rules: readonly ImportRule[], specifier: string): RuleDecision {
  const matching = rules.filter((rule) => matchesPattern(rule.match, specifier));
  const deny = matching.find((rule) => rule.action === 'deny');
  if (deny !== undefined) return { kind: 'deny', rule: `deny "${deny.match}"` };
  const map = matching.find((rule) => rule.action === 'map');
  if (map !== undefined) return { kind: 'map', rule: map as ImportRule & { action: 'map' } };
  if (matching.some((rule) => rule.action === 'allow')) return { kind: 'pass' };
  if (rules.some((rule) => rule.action === 'allow')) return { kind: 'deny', rule: 'no allow rule matches' };
  return { kind: 'pass' };
}

/** The files a policy makes the carrier read: a sandbox must let it see them. */
export function importFiles(policy: ImportPolicy | undefined): string[] {
  if (policy === undefined) return [];
  const files = policy.rules.flatMap((rule) => (rule.action === 'map' && 'file' in rule ? [rule.file] : []));
  return policy.handler === undefined ? files : [...files, policy.handler];
}
