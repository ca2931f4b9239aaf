// Which bindings a program can reach, read from its source before it runs, so that a person can
// approve a whole program once. A binding is reached through its global: `git.deleteBranch(...)`
// reaches git.deleteBranch, and a namespace used any other way (`const g = git`, `git[name]`)
// reaches everything under it. What the reading cannot follow (globalThis, eval, Function, a
// program that does not parse) reaches every binding. The list is what a person is shown; a call
// it missed (code built from strings through a constructor chain, say) is asked about on its own,
// since only the listed bindings are approved.
import { parse, type Node } from 'acorn';
import { ancestor } from 'acorn-walk';
import type { ProgramFormat } from '../../wire/messages.ts';

/** Globals through which a program reaches any global by a computed name, or runs code the reading cannot see. */
const DYNAMIC = new Set(['globalThis', 'global', 'self', 'window', 'eval', 'Function', 'Reflect', 'require', 'import']);

/** The names in `bindings` the (type-stripped) program can reach, sorted. */
export function reachableBindings(code: string, format: ProgramFormat, bindings: readonly string[]): string[] {
  let tree: Node;
  try {
    tree = parse(format === 'async-function' ? `(async function () {\n${code}\n})` : code, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowAwaitOutsideFunction: true,
      allowReturnOutsideFunction: true,
    });
  } catch {
    return [...bindings].sort();
  }
  const roots = new Set(bindings.map((name) => name.split('.')[0]!));
  const reached = new Set<string>();
  let dynamic = false;
  const reach = (prefix: string): void => {
    // git reaches git.*; git.deleteBranch.call reaches git.deleteBranch.
    for (const name of bindings) if (name === prefix || name.startsWith(`${prefix}.`) || prefix.startsWith(`${name}.`)) reached.add(name);
  };
  ancestor(tree, {
    Identifier(node, _state, ancestors) {
      const name = (node as Node & { name: string }).name;
      if (DYNAMIC.has(name)) dynamic = true;
      if (!roots.has(name)) return;
      // Follow the static member chain up from the global: git.branches.delete.
      let path = name;
      for (let at = ancestors.length - 2; at >= 0; at--) {
        const parent = ancestors[at] as Node & { type: string; object?: Node; property?: Node & { name?: string; value?: unknown }; computed?: boolean };
        if (parent.type !== 'MemberExpression' || parent.object !== ancestors[at + 1]) break;
        const key = !parent.computed ? parent.property?.name : typeof parent.property?.value === 'string' ? parent.property.value : undefined;
        if (key === undefined) break;
        path = `${path}.${key}`;
      }
      reach(path);
    },
    ThisExpression() {
      // In a script's or the REPL's top level, `this` is the global object.
      if (format !== 'async-function') dynamic = true;
    },
    ImportExpression() {
      dynamic = true;
    },
  });
  return (dynamic ? [...bindings] : [...reached]).sort();
}
