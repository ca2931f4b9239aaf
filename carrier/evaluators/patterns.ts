// Names a declaration binds, shared by the await lowering and the scoped REPL's scanner.
import type { Node, Pattern } from 'acorn';

/** Adds every identifier a binding pattern declares (`a`, `{ b: [c] }`, `...d`, `e = 1`) to `into`. */
export function boundNames(pattern: Pattern | Node | null, into: Set<string>): void {
  if (pattern === null) return;
  const node = pattern as Pattern;
  switch (node.type) {
    case 'Identifier':
      into.add(node.name);
      return;
    case 'ObjectPattern':
      for (const property of node.properties) boundNames(property.type === 'RestElement' ? property.argument : property.value, into);
      return;
    case 'ArrayPattern':
      for (const element of node.elements) boundNames(element, into);
      return;
    case 'RestElement':
      boundNames(node.argument, into);
      return;
    case 'AssignmentPattern':
      boundNames(node.left, into);
      return;
    default:
      return; // MemberExpression targets declare nothing
  }
}
