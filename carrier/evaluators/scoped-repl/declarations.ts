// What one scoped REPL program declares at its top level, read from Acorn's tree: the names the
// next programs receive, the names this program must not receive copies of, the final expression
// statement that becomes the completion, and any top-level `return`. Only statements are walked:
// an expression can hold a statement only inside a function or class body, which has its own scope.
import { tokTypes, type Program, type Statement, type Token } from 'acorn';
import { boundNames } from '../patterns.ts';
import { PhaseParser } from '../phase-parser.ts';

export interface Declarations {
  /** `let`, `const`, `using` and `class` names of the top level: these start in their TDZ. */
  readonly lexical: readonly string[];
  /** Function declarations of the top level: initialized before the program's first statement. */
  readonly functions: readonly string[];
  /** `var` names at any block depth (and, in sloppy code, Annex B block functions). */
  readonly vars: readonly string[];
  /** Whether the program itself opens with a "use strict" directive. */
  readonly useStrict: boolean;
  /** Source range of the last top-level expression statement's expression. */
  readonly completion?: { readonly start: number; readonly end: number };
  /** Offset of the first `return` outside any function. */
  readonly topLevelReturn?: number;
  /** Offset of an escaped identifier that spells the reserved prefix. */
  readonly reservedIdentifier?: number;
}

export const RESERVED_PREFIX = '__$binding_';

/** Parses a program (top-level await and return parse); throws Acorn's SyntaxError (with `pos`) when it does not parse. */
export function scanDeclarations(program: string, sloppy: boolean): Declarations {
  let reservedIdentifier: number | undefined;
  const ast = PhaseParser.parse(program, {
    ecmaVersion: 'latest',
    sourceType: 'script',
    allowAwaitOutsideFunction: true,
    allowReturnOutsideFunction: true,
    allowHashBang: false,
    // `\u005f_$binding_x` names the same binding as the text the evaluator already refuses.
    onToken(token: Token) {
      const value = (token as Token & { value?: unknown }).value;
      if (token.type === tokTypes.name && typeof value === 'string' && value.startsWith(RESERVED_PREFIX)) {
        reservedIdentifier ??= token.start;
      }
    },
  });
  const scan = new Scan();
  const useStrict = hasUseStrict(ast);
  scan.topLevel(ast, sloppy && !useStrict);
  const lastExpression = ast.body.findLast((statement) => statement.type === 'ExpressionStatement');
  return {
    lexical: [...scan.lexical],
    functions: [...scan.functions],
    vars: [...scan.vars],
    useStrict,
    ...(lastExpression === undefined ? {} : { completion: { start: lastExpression.expression.start, end: lastExpression.expression.end } }),
    ...(scan.topLevelReturn === undefined ? {} : { topLevelReturn: scan.topLevelReturn }),
    ...(reservedIdentifier === undefined ? {} : { reservedIdentifier }),
  };
}

function hasUseStrict(ast: Program): boolean {
  for (const statement of ast.body) {
    if (statement.type !== 'ExpressionStatement' || typeof statement.directive !== 'string') return false;
    if (statement.directive === 'use strict') return true;
  }
  return false;
}

class Scan {
  readonly lexical = new Set<string>();
  readonly functions = new Set<string>();
  readonly vars = new Set<string>();
  topLevelReturn: number | undefined;
  /** Sloppy-mode block functions, kept apart until the top-level lexical names are known. */
  private readonly blockFunctions = new Set<string>();

  topLevel(ast: Program, sloppy: boolean): void {
    for (const statement of ast.body) {
      // A labelled function (sloppy code only) is still a function declaration of the top level.
      let labelled = statement as Statement;
      while (labelled.type === 'LabeledStatement') labelled = labelled.body;
      if (labelled.type === 'FunctionDeclaration' && labelled !== statement) {
        this.functions.add(labelled.id.name);
      } else if (statement.type === 'VariableDeclaration' && statement.kind !== 'var') {
        for (const declarator of statement.declarations) boundNames(declarator.id, this.lexical);
      } else if (statement.type === 'ClassDeclaration') {
        this.lexical.add(statement.id.name);
      } else if (statement.type === 'FunctionDeclaration') {
        this.functions.add(statement.id.name);
      } else {
        // A script has no import or export declarations, so every other top-level node is a statement.
        this.statement(statement as Statement, sloppy);
      }
    }
    // Annex B gives a sloppy block function a function-level var unless a lexical name is in its way.
    for (const name of this.blockFunctions) {
      if (!this.lexical.has(name) && !this.functions.has(name)) this.vars.add(name);
    }
  }

  private statement(node: Statement | null | undefined, sloppy: boolean): void {
    if (node === null || node === undefined) return;
    switch (node.type) {
      case 'VariableDeclaration':
        if (node.kind === 'var') for (const declarator of node.declarations) boundNames(declarator.id, this.vars);
        return;
      case 'FunctionDeclaration':
        if (sloppy && !node.async && !node.generator) this.blockFunctions.add(node.id.name);
        return;
      case 'ReturnStatement':
        this.topLevelReturn ??= node.start;
        return;
      case 'BlockStatement':
        for (const child of node.body) this.statement(child, sloppy);
        return;
      case 'IfStatement':
        this.statement(node.consequent, sloppy);
        this.statement(node.alternate, sloppy);
        return;
      case 'ForStatement':
        if (node.init?.type === 'VariableDeclaration') this.statement(node.init, sloppy);
        this.statement(node.body, sloppy);
        return;
      case 'ForInStatement':
      case 'ForOfStatement':
        if (node.left.type === 'VariableDeclaration') this.statement(node.left, sloppy);
        this.statement(node.body, sloppy);
        return;
      case 'WhileStatement':
      case 'DoWhileStatement':
      case 'LabeledStatement':
      case 'WithStatement':
        this.statement(node.body, sloppy);
        return;
      case 'SwitchStatement':
        for (const switchCase of node.cases) for (const child of switchCase.consequent) this.statement(child, sloppy);
        return;
      case 'TryStatement':
        this.statement(node.block, sloppy);
        this.statement(node.handler?.body, sloppy);
        this.statement(node.finalizer, sloppy);
        return;
      default:
        return;
    }
  }
}
