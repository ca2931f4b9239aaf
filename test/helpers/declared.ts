// What a declarations text declares, read by TypeScript's own parser: its parse errors, the
// functions by dotted path, the type aliases, the JSDoc of each top-level namespace, and any
// statement that is none of those (which generated text never holds).
import ts from 'typescript';

export interface Declared {
  /** Parse errors, as TypeScript words them. */
  errors: string[];
  /** Every declared function, as its namespace path and name: `tracker.list_issues`. */
  functions: string[];
  /** The JSDoc text of each function, by path. */
  functionDocs: Map<string, string>;
  /** Top-level namespaces in order, and the JSDoc above each. */
  namespaces: Map<string, string>;
  types: string[];
  /** Statements that are not a namespace, a function or a type alias. */
  other: string[];
}

export function declared(text: string): Declared {
  const source = ts.createSourceFile('declarations.d.ts', text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const result: Declared = {
    errors: (source as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics.map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')),
    functions: [],
    functionDocs: new Map(),
    namespaces: new Map(),
    types: [],
    other: [],
  };
  const docOf = (node: ts.Node): string => ts.getJSDocCommentsAndTags(node).map((doc) => doc.getText()).join('\n');
  const visit = (statements: ts.NodeArray<ts.Statement>, prefix: string): void => {
    for (const statement of statements) {
      if (ts.isFunctionDeclaration(statement) && statement.name !== undefined) {
        const path = `${prefix}${statement.name.text}`;
        result.functions.push(path);
        result.functionDocs.set(path, docOf(statement));
      } else if (ts.isModuleDeclaration(statement) && ts.isIdentifier(statement.name) && statement.body !== undefined && ts.isModuleBlock(statement.body)) {
        if (prefix === '') result.namespaces.set(statement.name.text, docOf(statement));
        visit(statement.body.statements, `${prefix}${statement.name.text}.`);
      } else if (ts.isTypeAliasDeclaration(statement) && prefix === '') {
        result.types.push(statement.name.text);
      } else {
        result.other.push(statement.getText().slice(0, 200));
      }
    }
  };
  visit(source.statements, '');
  return result;
}
