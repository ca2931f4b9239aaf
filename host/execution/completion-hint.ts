// A per-call program is a function body: its last expression is discarded unless it is returned.
// Models often end with a bare expression and expect it back, so a run that returns nothing says
// why when its last statement is an expression whose only use was its value. Expressions run for
// their effect (calls, any `await`, assignments, `i++`, `delete`, `void`, `ready && go()`) get no
// hint: their value is plainly unused, and ending with `inspect(x)` or `await save(x)` is normal.
import { parse, type Node } from 'acorn';

export const DISCARDED_EXPRESSION_HINT = 'the program ended with an expression and returned nothing: a program is an async function body, so write `return <expression>` to hand back its value';

interface ExpressionNode {
  type: string;
  operator?: string;
  expressions?: ExpressionNode[];
}

/** The hint for a per-call program (types already stripped) whose last statement's value is discarded; undefined otherwise. */
export function discardedExpressionHint(program: string): string | undefined {
  let body: Node[];
  try {
    const ast = parse(`(async function () {\n${program}\n})`, { ecmaVersion: 'latest', sourceType: 'script' }) as unknown as {
      body: [{ expression: { body: { body: Node[] } } }];
    };
    body = ast.body[0].expression.body.body;
  } catch {
    return undefined;
  }
  const last = body.at(-1) as (Node & { expression?: ExpressionNode; directive?: string }) | undefined;
  if (last?.type !== 'ExpressionStatement' || last.expression === undefined || last.directive !== undefined) return undefined;
  return forItsValue(last.expression) ? DISCARDED_EXPRESSION_HINT : undefined;
}

function forItsValue(expression: ExpressionNode): boolean {
  switch (expression.type) {
    case 'CallExpression':
    case 'NewExpression':
    case 'AssignmentExpression':
    case 'UpdateExpression':
    case 'YieldExpression':
    case 'ImportExpression':
    // `await sleep(10)`, `await done`, `await null`: awaited for the wait, whatever follows it.
    case 'AwaitExpression':
      return false;
    case 'UnaryExpression':
      return expression.operator !== 'delete' && expression.operator !== 'void';
    case 'LogicalExpression':
      // `ready && start()` runs for its effect; `a ?? b` is wanted for its value.
      return forItsValue((expression as { right?: ExpressionNode }).right!);
    case 'ConditionalExpression': {
      const { consequent, alternate } = expression as { consequent?: ExpressionNode; alternate?: ExpressionNode };
      return forItsValue(consequent!) && forItsValue(alternate!);
    }
    case 'SequenceExpression':
      return forItsValue(expression.expressions!.at(-1)!);
    case 'ChainExpression':
      return forItsValue((expression as { expression?: ExpressionNode }).expression!);
    default:
      return true;
  }
}
