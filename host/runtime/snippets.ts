// Snippets: a program that worked, saved by name, which later programs call with an input as
// `snippets.<name>(input)`. The call runs the saved program as a run of its own (journaled like
// any other), with `input` bound to the argument, and answers its value or throws its failure.
import { encodeJson } from '../../wire/json.ts';
import type { BindingFunction } from '../execution/bindings.ts';
import type { RunResult } from '../execution/owners.ts';
import type { SnippetRecord } from './journal.ts';

/** The saved program as the body the snippet call runs: `input` is its parameter, so the program cannot clash with it. */
export function snippetProgram(program: string, input: unknown): string {
  return `return await (async (input) => {\n${program}\n})(${encodeJson(input ?? null, 'input')});`;
}

/** One binding per snippet, named `snippets.<name>`. */
export function snippetBindings(saved: SnippetRecord[], run: (program: string) => Promise<RunResult>): Map<string, BindingFunction> {
  const bindings = new Map<string, BindingFunction>();
  for (const { name, program } of saved) {
    bindings.set(`snippets.${name}`, async (input?: unknown) => {
      const result = await run(snippetProgram(program, input));
      if (result.status === 'ok') return result.value;
      throw Object.assign(new Error(`snippet ${name} failed (${result.failure.kind}): ${result.failure.message}`), { code: 'PTC_SNIPPET_FAILED' });
    });
  }
  return bindings;
}
