// A journaled run's calls: a call the journal already answered is answered again from it (its
// value and images, or its error), a call that does not match the next journaled one is a
// divergence that ends the run, and step(name, fn) records the value fn made once.
import type { ImageDescriptor, InvokeResult } from '../../../wire/messages.ts';
import { encodeJson } from '../../../wire/json.ts';
import { bindingFailure, decodeArguments } from '../bindings.ts';
import { STEP, type CallMatch, type RunJournal } from '../journal/replay.ts';
import type { RunState } from './state.ts';

type Diverged = Extract<CallMatch, { kind: 'diverged' }>;

/** Ends the run with the divergence and throws it to the call that diverged. */
export function diverge(state: RunState, match: Diverged): never {
  state.stop({ kind: 'divergence', message: match.message, position: match.position, expected: match.expected, actual: match.actual });
  throw Object.assign(new Error(match.message), { code: 'PTC_DIVERGED' });
}

/** The answer a journaled call had, given again: its value and images, or its error. */
export async function replayed(stored: { result: string | null; error: string | null }, registerImage: (path: string) => Promise<ImageDescriptor>): Promise<InvokeResult> {
  if (stored.error !== null) {
    const { message, code } = JSON.parse(stored.error) as { message: string; code?: string };
    throw Object.assign(new Error(message), code !== undefined ? { code } : {});
  }
  const { value, images } = JSON.parse(stored.result!) as { value: string | null; images: Array<{ at: Array<string | number>; path: string }> };
  const placed = [];
  for (const { at, path } of images) placed.push({ at, image: await registerImage(path) });
  return { ...(value !== null ? { value } : {}), images: placed };
}

/** A failed call's error as the journal keeps it: its message and code. */
export function errorText(error: unknown): string {
  const failure = bindingFailure(error);
  const code = (failure as { code?: unknown }).code;
  return JSON.stringify({ message: failure.message, ...(typeof code === 'string' ? { code } : {}) });
}

/** step(name, fn) of one run: [name] asks for the journaled value; [name, value] records the one fn made. */
export function journalSteps(journal: RunJournal, state: RunState): (argsText: string) => Promise<InvokeResult> {
  const asked = new Map<string, number>();
  return async (argsText) => {
    const args = await decodeArguments(argsText);
    if (typeof args[0] !== 'string' || args.length < 1 || args.length > 2) throw Object.assign(new Error('step(name, fn): name must be a string'), { code: 'PTC_STEP' });
    if (args.length === 1) {
      const match = journal.match(STEP, argsText);
      if (match.kind === 'diverged') diverge(state, match);
      if (match.kind === 'answered') {
        const { value } = JSON.parse(match.call.result!) as { value: string };
        return { value: `{"recorded":true,"value":${value}}`, images: [] };
      }
      if (match.kind === 'run') asked.set(argsText, match.sequence);
      return { value: '{"recorded":false}', images: [] };
    }
    const key = encodeJson([args[0]], 'step');
    const sequence = asked.get(key);
    if (sequence === undefined) throw Object.assign(new Error(`step ${JSON.stringify(args[0])}: recorded without being asked for`), { code: 'PTC_STEP' });
    asked.delete(key);
    journal.record(sequence, STEP, key, 'done', JSON.stringify({ value: encodeJson(args[1], 'value'), images: [] }));
    return { images: [] };
  };
}
