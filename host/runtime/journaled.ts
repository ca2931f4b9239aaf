// The runtime's journal side: a journaled run is begun and finished around its attempt (an
// attempt that throws leaves the run unfinished, to resume), calls the saved snippets as
// `snippets.<name>(input)`, and the journal's queries answer only in a runtime that has one.
import type { BindingFunction } from '../execution/bindings.ts';
import type { RunResult } from '../execution/owners.ts';
import type { RunJournal } from '../execution/journal/replay.ts';
import { Journal } from './journal.ts';
import type { ResolvedConfig } from './config.ts';
import { snippetBindings } from './snippets.ts';

/** The journal of a runtime, or undefined when its configuration names none. */
export function openJournal(config: ResolvedConfig): Journal | undefined {
  return config.journal === undefined ? undefined : new Journal(config.journal);
}

/** The runtime's journal, or an error naming the method that needs one. */
export function needJournal(journal: Journal | undefined, what: string): Journal {
  if (journal === undefined) throw new Error(`ptc ${what}: this runtime has no journal (config.journal names its file)`);
  return journal;
}

/** Refuses binding names the journal's own globals take. */
export function checkJournalNames(bindings: Map<string, BindingFunction>): void {
  if (bindings.has('step')) throw new TypeError('ptc run(): binding name "step" is taken by step(name, fn) in a runtime with a journal');
}

/** Adds the saved snippets to a journaled run's bindings: each a run of its own, through `run`. */
export function withSnippets(journal: Journal, flat: Map<string, BindingFunction>, run: (program: string) => Promise<RunResult>): void {
  const saved = journal.snippets();
  if (saved.length === 0) return;
  if ([...flat.keys()].some((name) => name === 'snippets' || name.startsWith('snippets.'))) {
    throw new TypeError('ptc run(): binding name "snippets" is taken by the saved snippets in a runtime whose journal has some');
  }
  for (const [name, fn] of snippetBindings(saved, run)) flat.set(name, fn);
}

/** Runs one journaled attempt and records how it ended; an attempt that throws leaves the run to resume. */
export async function journaled(journal: Journal, recorded: RunJournal, attempt: () => Promise<RunResult>): Promise<RunResult> {
  let result: RunResult;
  try {
    result = await attempt();
  } catch (error) {
    journal.abandon(recorded);
    throw error;
  }
  return journal.finish(recorded, result);
}

