// How `ptc repl` reads what is typed: when a submission is complete, and Node's interactive rule
// for input in braces. Pure functions of the text (and the session's program format).
import { parse, type Options } from 'acorn';
import { stripTypes, type ProgramFormat } from '../index.ts';

const PARSE_OPTIONS: Options = { ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true };

interface AcornError {
  message: string;
  pos: number;
  raisedAt: number;
}

/**
 * Whether input needs more lines: it fails to parse only because it ended (an open block,
 * template or comment, an operator waiting for its operand). Any other error is submitted for
 * the runtime to report.
 */
export function isIncomplete(source: string, format: ProgramFormat = 'scoped-repl'): boolean {
  const error = syntaxError(source, format);
  if (error === undefined) return false;
  if (endsEarly(error, source)) return true;
  // Type annotations stop acorn mid-input. The host's stripper blanks them in place, so the
  // stripped text keeps every position; when stripping itself runs out of input, so did the source.
  const stripped = stripTypes(source, 'repl.ts', format);
  if (!stripped.ok) return /got '<eof>'|Unexpected eof|Unterminated template/.test(stripped.error.message);
  const remaining = syntaxError(stripped.code, format);
  return remaining !== undefined && endsEarly(remaining, stripped.code);
}

/**
 * Node's REPL reads input that starts with `{` and ends with `}` as an object literal when it
 * parses as one (`{ a: 1 }` shows the object), and as a block otherwise. The library keeps the
 * reference's rule that a leading `{ ... }` is a block; this interactive front end applies
 * Node's by submitting such input in parentheses (first-line columns after the `(` move by one).
 * Returns the text to submit instead, or undefined to submit the input as it is.
 */
export function asObjectLiteral(source: string, format: ProgramFormat): string | undefined {
  if (!/^\s*\{/.test(source) || !/\}\s*$/.test(source)) return undefined;
  const wrapped = `(${source})`;
  const stripped = stripTypes(wrapped, 'repl.ts', format);
  if (!stripped.ok) return undefined;
  return syntaxError(stripped.code, format) === undefined ? wrapped : undefined;
}

function syntaxError(source: string, format: ProgramFormat): AcornError | undefined {
  try {
    parse(source, PARSE_OPTIONS);
    return undefined;
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    // In sloppy code (Node's REPL, Scripts) `await` can be a variable: `typeof await` is complete.
    if (format === 'repl' || format === 'vm-script') {
      try {
        parse(source, { ...PARSE_OPTIONS, allowAwaitOutsideFunction: false });
        return undefined;
      } catch {
        // The first error is the one to report.
      }
    }
    return error as SyntaxError & AcornError;
  }
}

// acorn reports a missing token at the end-of-input token (pos), and an unterminated template or
// a string continued with a backslash where the scanner stopped (raisedAt). An unterminated block
// comment is reported at its start, but only ever at the end of input.
function endsEarly(error: AcornError, source: string): boolean {
  return error.pos >= source.length || error.raisedAt >= source.length || error.message.startsWith('Unterminated comment');
}

/**
 * The names a submission declares at its top level (var, let, const, function, class), for Tab:
 * the carrier lists a Script's lexical declarations nowhere else. Empty when it does not parse.
 */
export function declaredNames(source: string, format: ProgramFormat): string[] {
  const stripped = stripTypes(source, 'repl.ts', format);
  if (!stripped.ok) return [];
  let program: { body: Node[] };
  try {
    program = parse(stripped.code, PARSE_OPTIONS) as unknown as { body: Node[] };
  } catch {
    return [];
  }
  const names: string[] = [];
  for (const statement of program.body) {
    if (statement.type === 'VariableDeclaration') for (const declarator of statement.declarations ?? []) patternNames(declarator.id, names);
    else if ((statement.type === 'FunctionDeclaration' || statement.type === 'ClassDeclaration') && statement.id) names.push(statement.id.name!);
  }
  return names;
}

interface Node {
  type: string;
  name?: string;
  id?: Node;
  declarations?: { id: Node }[];
  properties?: Node[];
  elements?: (Node | null)[];
  value?: Node;
  left?: Node;
  argument?: Node;
}

function patternNames(pattern: Node | null | undefined, into: string[]): void {
  if (!pattern) return;
  if (pattern.type === 'Identifier') into.push(pattern.name!);
  else if (pattern.type === 'ObjectPattern') for (const property of pattern.properties ?? []) patternNames(property.type === 'RestElement' ? property.argument : property.value, into);
  else if (pattern.type === 'ArrayPattern') for (const element of pattern.elements ?? []) patternNames(element, into);
  else if (pattern.type === 'AssignmentPattern') patternNames(pattern.left, into);
  else if (pattern.type === 'RestElement') patternNames(pattern.argument, into);
}

/**
 * What Tab completes at the end of `line`: a dotted path of names and the partial name after its
 * last dot (`foo.ba` is `{ path: ['foo'], partial: 'ba' }`); undefined where no name is being typed.
 */
export function completionTarget(line: string): { path: string[]; partial: string } | undefined {
  const match = /(?:^|[^\w$.])((?:[A-Za-z_$][\w$]*\s*\.\s*)*)([A-Za-z_$][\w$]*)?$/.exec(line);
  if (match === null) return undefined;
  const path = match[1]!.split('.').map((name) => name.trim()).filter((name) => name !== '');
  const partial = match[2] ?? '';
  if (path.length === 0 && partial === '') return undefined;
  return { path, partial };
}
