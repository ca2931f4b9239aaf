// Top-level await for Script programs, after Node's REPL `processTopLevelAwait`
// (lib/internal/repl/await.js): parse the source inside an async arrow, walk it without entering
// nested functions, hoist top-level declarations to Script bindings and wrap the rest in the arrow.
// Edits are insertions and keyword replacements at character positions, so every line stays where
// it was (columns on edited lines move).
import { type AnyNode, type ArrowFunctionExpression, type BlockStatement, type CallExpression, type ExpressionStatement, type Statement, type VariableDeclaration } from 'acorn';
import { base, recursive, type RecursiveVisitors, type WalkerCallback } from 'acorn-walk';
import { boundNames } from './patterns.ts';
import { PhaseParser } from './phase-parser.ts';

export interface LoweredScript {
  /**
   * Script source whose completion value is a promise of `{ value }` — the final expression
   * statement's value, not yet awaited — or of undefined when the program has no final expression.
   */
  source: string;
}

// The arrow's opening stays on the program's first line and its closing follows a newline, so a
// trailing line comment cannot swallow it.
const PARSE_OPEN = '(async () => {';
const PARSE_CLOSE = '\n})()';
const POSITION = Symbol('ptc.syntaxErrorPosition');

/**
 * Lowers a program with top-level await into a Script that runs it in an async arrow; null when it
 * needs no lowering (no top-level await, a top-level return, or source the wrapper cannot parse),
 * so the caller compiles it natively and keeps the engine's diagnostics. Throws a SyntaxError
 * carrying the source position (see syntaxErrorPosition) for a top-level `using` declaration.
 */
export function lowerTopLevelAwait(source: string): LoweredScript | null {
  if (!source.includes('await')) return null;
  // A hashbang is only valid at the very start of a Script; as a comment it keeps its length.
  const text = source.startsWith('#!') ? `//${source.slice(2)}` : source;
  let body: BlockStatement;
  try {
    const program = PhaseParser.parse(`${PARSE_OPEN}${text}${PARSE_CLOSE}`, { ecmaVersion: 'latest' });
    const call = (program.body[0] as ExpressionStatement).expression as CallExpression;
    body = (call.callee as ArrowFunctionExpression).body as BlockStatement;
  } catch {
    return null;
  }
  const state = newState(body, text);
  recursive(body, state, visitors);
  if (state.containsReturn) return null;
  if (state.using !== undefined) {
    throw unsupportedUsing(state.using.kind, state.using.start - PARSE_OPEN.length);
  }
  if (!state.containsAwait) return null;

  const completion = `$ptcCompletion${uniqueSuffix(source)}`;
  const found = completionStatement(body.body);
  if (typeof found === 'object') {
    // The statement, not its expression, ends after any parentheses around the expression.
    state.prepend(found, `${completion} = { __proto__: null, value: (`);
    if (state.charAt(found.end - 1) === ';') state.insert(found.end - 1, ') }');
    else state.append(found, ') };');
  }
  const hoisted = [...declare('var', state.hoistedVars), ...declare('let', state.hoistedLets)].join('');
  return { source: `${hoisted}(async (${completion}) => {${state.text()}\nreturn ${completion};\n})()` };
}

/** The message for a top-level `using` or `await using` declaration, which a Script cannot hold. */
export function unsupportedUsing(kind: string, position: number): SyntaxError {
  return withPosition(
    new SyntaxError(`top-level \`${kind}\` declarations are not supported; put disposable bindings inside a block`),
    position,
  );
}

/** Attaches the source offset an error refers to, for the evaluator to decorate with a caret. */
export function withPosition<E extends Error>(error: E, position: number): E {
  Object.defineProperty(error, POSITION, { value: position });
  return error;
}

/** The source offset of a SyntaxError raised by this module, or undefined for any other value. */
export function syntaxErrorPosition(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const position = (error as { [POSITION]?: unknown })[POSITION];
  return typeof position === 'number' ? position : undefined;
}

interface State {
  body: BlockStatement;
  ancestors: AnyNode[];
  strict: boolean;
  containsAwait: boolean;
  containsReturn: boolean;
  using: VariableDeclaration | undefined;
  hoistedVars: Set<string>;
  hoistedLets: Set<string>;
  prepend(node: AnyNode, text: string): void;
  /** Inserts before the character at a parse position. */
  insert(position: number, text: string): void;
  append(node: AnyNode, text: string): void;
  replace(start: number, end: number, text: string): void;
  /** The unedited source character at a parse position. */
  charAt(position: number): string;
  text(): string;
}

// One slot per source character: insertions accumulate around a character and replacements empty a
// range, so edits never shift the positions of later ones (Node's REPL edits the same way).
function newState(body: BlockStatement, text: string): State {
  const chars = text.split('');
  const at = (position: number) => position - PARSE_OPEN.length;
  return {
    body,
    ancestors: [],
    strict: hasUseStrict(body),
    containsAwait: false,
    containsReturn: false,
    using: undefined,
    hoistedVars: new Set(),
    hoistedLets: new Set(),
    prepend(node, insert) {
      chars[at(node.start)] = insert + chars[at(node.start)];
    },
    insert(position, insert) {
      chars[at(position)] = insert + chars[at(position)];
    },
    append(node, insert) {
      chars[at(node.end) - 1] += insert;
    },
    replace(start, end, insert) {
      chars[at(start)] = insert;
      for (let i = at(start) + 1; i < at(end); i++) chars[i] = '';
    },
    charAt: (position) => text.charAt(at(position)),
    text: () => chars.join(''),
  };
}

function isTopLevel(state: State): boolean {
  return state.ancestors[state.ancestors.length - 2] === state.body;
}

function parentOf(state: State): AnyNode | undefined {
  return state.ancestors[state.ancestors.length - 2];
}

const skip = () => {};

const ownVisitors: RecursiveVisitors<State> = {
  // Nested functions are separate evaluations: their await, return and declarations are their own.
  FunctionExpression: skip,
  ArrowFunctionExpression: skip,
  StaticBlock: skip,
  FunctionDeclaration(node, state) {
    // Sloppy-mode block functions also become Script globals natively (Annex B); strict ones stay
    // in their block, and a function as an `if` or label body stays local.
    const parent = parentOf(state);
    if (node.id === null) return;
    const inList = parent === state.body || (!state.strict && (parent?.type === 'BlockStatement' || parent?.type === 'SwitchCase'));
    if (!inList) return;
    state.prepend(node, `this.${node.id.name} = ${node.id.name}; `);
    state.hoistedVars.add(node.id.name);
  },
  ClassDeclaration(node, state, c) {
    if (isTopLevel(state) && node.id !== null) {
      state.prepend(node, `${node.id.name}=`);
      state.append(node, ';');
      state.hoistedLets.add(node.id.name);
    }
    base.ClassDeclaration!(node, state, c);
  },
  // Member bodies and field initializers run later, as functions; computed keys run now.
  MethodDefinition(node, state, c) {
    if (node.computed) c(node.key, state);
  },
  PropertyDefinition(node, state, c) {
    if (node.computed) c(node.key, state);
  },
  AwaitExpression(node, state, c) {
    state.containsAwait = true;
    base.AwaitExpression!(node, state, c);
  },
  ForOfStatement(node, state, c) {
    if (node.await) state.containsAwait = true;
    base.ForOfStatement!(node, state, c);
  },
  ReturnStatement(node, state, c) {
    state.containsReturn = true;
    base.ReturnStatement!(node, state, c);
  },
  VariableDeclaration(node, state, c) {
    if (node.kind === 'await using') state.containsAwait = true;
    const topLevel = isTopLevel(state);
    if (node.kind === 'using' || node.kind === 'await using') {
      if (topLevel) state.using ??= node;
    } else if (node.kind === 'var' || topLevel) {
      hoistDeclaration(node, state);
    }
    base.VariableDeclaration!(node, state, c);
  },
};

// Track ancestors around every visitor; aggregate types ("Statement", "Expression") revisit the
// same node, which must not be pushed twice.
const visitors: RecursiveVisitors<State> = {};
for (const type of Object.keys(base) as (keyof RecursiveVisitors<State>)[]) {
  const visit = (ownVisitors[type] ?? base[type]) as (node: AnyNode, state: State, c: WalkerCallback<State>) => void;
  (visitors as Record<string, typeof visit>)[type] = (node, state, c) => {
    const entered = node !== state.ancestors[state.ancestors.length - 1];
    if (entered) state.ancestors.push(node);
    visit(node, state, c);
    if (entered) state.ancestors.pop();
  };
}

// `const {a, b: [c]} = v` becomes `void ({a, b: [c]} = v);` with `let a, c;` hoisted; a `var` in a
// for-in/of head loses its keyword; a declarator without initializer assigns undefined.
function hoistDeclaration(node: VariableDeclaration, state: State): void {
  const parent = parentOf(state);
  const iterationHead = (parent?.type === 'ForInStatement' || parent?.type === 'ForOfStatement') && parent.left === node;
  const names = node.kind === 'var' ? state.hoistedVars : state.hoistedLets;
  for (const declarator of node.declarations) boundNames(declarator.id, names);
  if (iterationHead) {
    state.replace(node.start, node.start + node.kind.length, '');
    return;
  }
  const several = node.declarations.length > 1;
  state.replace(node.start, node.start + node.kind.length, several ? 'void (' : 'void');
  for (const declarator of node.declarations) {
    state.prepend(declarator, '(');
    state.append(declarator, declarator.init ? ')' : '=undefined)');
  }
  if (several) state.append(node.declarations[node.declarations.length - 1]!, ')');
  // A statement that relied on automatic semicolon insertion could otherwise join the next line.
  if (parent?.type !== 'ForStatement' && state.charAt(node.end - 1) !== ';') state.append(node, ';');
}


/**
 * The statement whose value is the program's completion, as a Script would compute it: the last
 * statement that produces a value, looking through blocks and labels; declarations and empty
 * statements produce none. 'empty' when nothing does, 'other' when the value comes from a statement
 * this lowering does not box (if, loops, try, switch), which then completes with undefined.
 */
function completionStatement(statements: Statement[]): ExpressionStatement | 'empty' | 'other' {
  for (let i = statements.length - 1; i >= 0; i--) {
    const statement = statements[i]!;
    let found: ExpressionStatement | 'empty' | 'other';
    switch (statement.type) {
      case 'EmptyStatement':
      case 'FunctionDeclaration':
      case 'ClassDeclaration':
      case 'VariableDeclaration':
        continue;
      case 'ExpressionStatement':
        // Boxing a directive would take the program out of strict mode.
        return statement.directive === undefined ? statement : 'other';
      case 'BlockStatement':
        found = completionStatement(statement.body);
        break;
      case 'LabeledStatement':
        found = completionStatement([statement.body]);
        break;
      default:
        return 'other';
    }
    if (found !== 'empty') return found;
  }
  return 'empty';
}

function hasUseStrict(body: BlockStatement): boolean {
  for (const statement of body.body) {
    if (statement.type !== 'ExpressionStatement' || statement.directive === undefined) return false;
    if (statement.directive === 'use strict') return true;
  }
  return false;
}

function declare(kind: 'var' | 'let', names: Set<string>): string[] {
  return names.size === 0 ? [] : [`${kind} ${[...names].join(', ')}; `];
}

/** A suffix that keeps the completion parameter's name out of the program's own identifiers. */
function uniqueSuffix(source: string): string {
  let suffix = 0;
  while (source.includes(`$ptcCompletion${suffix === 0 ? '' : suffix}`)) suffix++;
  return suffix === 0 ? '' : String(suffix);
}
