// The runtime's side of the journal: each run of a runtime with `journal` is recorded under its
// runId; resume() re-runs a run that never finished (its host died, or it was left waiting for an
// approval) against what the journal holds; runs() and calls() are the audit trail.
// What the journal holds decides what resume() runs again and what revert() undoes, so no run of
// the runtime may write it: a run whose writable roots hold the journal's directory (where SQLite
// also keeps its -wal and -shm files) or the directory of its key is refused before it starts, and
// every row is checked against its tag when read (host/execution/journal/key.ts).
import { realpathSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import { decodeJson } from '../../wire/decode.ts';
import type { JsonValue } from '../../wire/json.ts';
import type { RunResult } from '../execution/owners.ts';
import { journalRealPath, openJournal, type CallState, type JournalStore, type RunStatus } from '../execution/journal/store.ts';
import { journalKeyDirectory } from '../sandbox/private-directory.ts';
import { PROGRAM, RunJournal, STEP, type CallDetail } from '../execution/journal/replay.ts';
import type { SandboxPolicy } from '../sandbox/index.ts';
import { bindingOptions, type ApprovalRecord } from '../execution/approval.ts';
import type { BindingFunction } from '../execution/bindings.ts';

/** What a resumed run needs besides its bindings: the request as the first attempt resolved it. */
export interface JournaledRequest {
  cwd: string;
  filename: string;
  timeoutMs: number | null;
  cpuTimeMs: number | null;
  discardCompletion: boolean;
  policy: SandboxPolicy;
}

/** One execution in the journal, as runs() lists it. */
export interface RunRecord {
  runId: string;
  /** running or waiting (for approval): not finished, so resume() can take it up; ok or failed: finished. */
  status: RunStatus;
  program: string;
  createdAt: number;
  updatedAt: number;
  /** 1, plus one for each resume. */
  attempts: number;
  result?: RunResult;
}

/** One binding call (or step) of a run, as calls() lists it. */
export interface CallRecord {
  /** From 1; 0 is the program's approval, when the run asked for one. */
  sequence: number;
  /** The binding's dotted name, "step" for a step(name, fn) value (its args are [name]), or "program" for call 0 (its args are the gated bindings it listed). */
  binding: string;
  args: JsonValue[];
  state: CallState;
  /** done: the value the program got (absent for undefined). */
  value?: JsonValue;
  /** failed or rejected: what the program got thrown. */
  error?: { message: string; code?: string };
  /** How many times its binding started: more than 1 when a resumed run ran it again. */
  attempt?: number;
  /** How its approval was decided and what that answer covered, when a rule, an answer or a person decided it. */
  approval?: ApprovalRecord;
  /** reconcile's answer for the call after a crash, and the reason of a `fail`. */
  reconciled?: 'took-effect' | 'run-again' | 'fail';
  reason?: string;
}

/** What revert() did with one applied call, newest first. */
export interface RevertRecord {
  sequence: number;
  binding: string;
  reverted: boolean;
  /** Why it was not reverted: the binding has no revert, its revert threw, or an earlier revert failed. */
  reason?: string;
}

/** A saved program, called from later programs as `snippets.<name>(input)`. */
export interface SnippetRecord {
  name: string;
  program: string;
  description?: string;
}

const SNIPPET_NAME = /^[A-Za-z_$][\w$]*$/;

/**
 * Throws when a run under `request`'s policy could write the journal or its key: their real
 * directories inside the workspace root (workspace-write) or a writable root, symlinks resolved.
 * full-access restricts nothing and is not checked: such a program is trusted with the user's files.
 */
function refuseWritable(journal: string, request: Pick<JournaledRequest, 'cwd' | 'policy'>, what: string): void {
  const policy = request.policy;
  if (policy?.mode !== 'workspace-write') return;
  const roots = [
    { field: policy.workspaceRoot === undefined ? 'the workspace root (its cwd)' : 'workspaceRoot', path: policy.workspaceRoot ?? request.cwd },
    ...(policy.writableRoots ?? []).map((path, index) => ({ field: `writableRoots[${index}]`, path })),
  ];
  const places = [
    { what: JSON.stringify(journal), path: dirname(journalRealPath(journal)) },
    { what: `key directory ${JSON.stringify(journalKeyDirectory())}`, path: realOrAsIs(journalKeyDirectory()) },
  ];
  for (const root of roots) {
    const real = realOrAsIs(resolvePath(request.cwd, root.path));
    const place = places.find(({ path }) => path === real || path.startsWith(real === '/' ? '/' : `${real}/`));
    if (place !== undefined) {
      throw new Error(`ptc ${what}: the journal ${place.what} is inside ${JSON.stringify(real)}, which this run may write (${root.field}); a program there could rewrite what resume() and revert() act on. Keep the journal outside every writable root`);
    }
  }
}

function realOrAsIs(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

export class Journal {
  readonly #store: JournalStore;
  readonly #active = new Set<string>();
  readonly #path: string;

  constructor(path: string) {
    this.#store = openJournal(path);
    this.#path = path;
  }

  /** Records a new run; returns its journal. */
  begin(runId: string, program: string, request: JournaledRequest): RunJournal {
    refuseWritable(this.#path, request, 'run()');
    if (this.#store.run(runId) !== undefined) throw new Error(`ptc run(): runId ${JSON.stringify(runId)} is in the journal already; resume() takes up a journaled run`);
    this.#store.insertRun(runId, program, JSON.stringify(request));
    this.#active.add(runId);
    return new RunJournal(this.#store, runId);
  }

  /** Takes up an unfinished run: its program, request and a journal that answers its calls. */
  reopen(runId: string): { program: string; request: JournaledRequest; journal: RunJournal } {
    const stored = this.#store.run(runId);
    if (stored === undefined) throw new Error(`ptc resume(): the journal has no run ${JSON.stringify(runId)}`);
    if (stored.status === 'ok' || stored.status === 'failed') throw new Error(`ptc resume(): run ${JSON.stringify(runId)} has finished (${stored.status}); only a run that never finished can be resumed`);
    if (this.#active.has(runId)) throw new Error(`ptc resume(): run ${JSON.stringify(runId)} is in progress in this runtime`);
    const request = JSON.parse(stored.request) as JournaledRequest;
    refuseWritable(this.#path, request, 'resume()');
    // Read (and so checked) before the run is marked as taken up.
    const calls = this.#store.calls(runId);
    this.#store.reopenRun(runId);
    this.#active.add(runId);
    return { program: stored.program, request, journal: new RunJournal(this.#store, runId, calls) };
  }

  /** Records the outcome; a finished run that skipped journaled calls is a divergence. */
  finish(journal: RunJournal, result: RunResult): RunResult {
    this.#active.delete(journal.runId);
    let final: RunResult = { ...result, runId: journal.runId };
    const missed = result.status === 'ok' ? journal.missed() : undefined;
    if (missed !== undefined) {
      final = { status: 'failed', failure: { kind: 'divergence', ...missed }, output: result.output, sandbox: result.sandbox, warm: result.warm, runId: journal.runId };
    }
    this.#store.setStatus(journal.runId, final.status, JSON.stringify(final, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}` : value)));
    return final;
  }

  /** A run whose attempt ended without a result (a caller mistake thrown by run()) stays resumable. */
  abandon(journal: RunJournal): void {
    this.#active.delete(journal.runId);
  }

  runs(): RunRecord[] {
    return this.#store.runs().map((run) => ({
      runId: run.runId,
      status: run.status,
      program: run.program,
      createdAt: run.createdAt,
      updatedAt: run.updatedAt,
      attempts: run.attempts,
      ...(run.result !== null ? { result: JSON.parse(run.result) as RunResult } : {}),
    }));
  }

  calls(runId: string): CallRecord[] {
    if (this.#store.run(runId) === undefined) throw new Error(`ptc calls(): the journal has no run ${JSON.stringify(runId)}`);
    return this.#store.calls(runId).map((call) => {
      const binding = call.binding === STEP ? 'step' : call.binding === PROGRAM ? 'program' : call.binding;
      const record: CallRecord = { sequence: call.sequence, binding, args: decodeJson(call.args) as JsonValue[], state: call.state };
      if (call.result !== null) {
        const { value } = JSON.parse(call.result) as { value: string | null };
        if (value !== null) record.value = decodeJson(value) as JsonValue;
      }
      if (call.error !== null) record.error = JSON.parse(call.error) as { message: string; code?: string };
      if (call.detail !== null) Object.assign(record, JSON.parse(call.detail) as CallDetail);
      return record;
    });
  }

  /**
   * Rolls back a run's applied calls, newest first, through each binding's `revert(result, args)`.
   * A binding without one is passed over (reads need none); the first revert that throws stops
   * the rollback, since older calls may be what later ones built on.
   */
  async revert(runId: string, bindings: Map<string, BindingFunction>): Promise<RevertRecord[]> {
    if (this.#store.run(runId) === undefined) throw new Error(`ptc revert(): the journal has no run ${JSON.stringify(runId)}`);
    if (this.#active.has(runId)) throw new Error(`ptc revert(): run ${JSON.stringify(runId)} is in progress in this runtime`);
    const applied = this.calls(runId).filter((call) => call.state === 'done' && call.sequence !== 0 && call.binding !== 'step').reverse();
    const report: RevertRecord[] = [];
    let stopped: string | undefined;
    for (const call of applied) {
      const entry = { sequence: call.sequence, binding: call.binding };
      if (stopped !== undefined) {
        report.push({ ...entry, reverted: false, reason: stopped });
        continue;
      }
      const fn = bindings.get(call.binding);
      const revert = fn === undefined ? undefined : bindingOptions(fn).revert;
      if (revert === undefined) {
        report.push({ ...entry, reverted: false, reason: fn === undefined ? 'no binding of that name was given' : 'the binding has no revert' });
        continue;
      }
      try {
        await revert(call.value, call.args);
      } catch (error) {
        report.push({ ...entry, reverted: false, reason: `its revert threw: ${error instanceof Error ? error.message : String(error)}` });
        stopped = `not attempted: the revert of call ${call.sequence} failed`;
        continue;
      }
      this.#store.setCallState(runId, call.sequence, 'reverted');
      report.push({ ...entry, reverted: true });
    }
    return report;
  }

  /** Saves the program of a run that finished ok under `name`. */
  saveSnippet(name: string, runId: string, description?: string): SnippetRecord {
    if (typeof name !== 'string' || !SNIPPET_NAME.test(name)) throw new TypeError(`ptc saveSnippet(): name must be a JavaScript identifier (it is called as snippets.<name>), got ${JSON.stringify(name)}`);
    if (description !== undefined && typeof description !== 'string') throw new TypeError(`ptc saveSnippet(): description must be a string, got ${typeof description}`);
    const run = this.#store.run(runId);
    if (run === undefined) throw new Error(`ptc saveSnippet(): the journal has no run ${JSON.stringify(runId)}`);
    if (run.status !== 'ok') throw new Error(`ptc saveSnippet(): run ${JSON.stringify(runId)} did not finish ok (status ${run.status}); only a program that worked is saved`);
    this.#store.putSnippet(name, run.program, description ?? null);
    return { name, program: run.program, ...(description !== undefined ? { description } : {}) };
  }

  snippets(): SnippetRecord[] {
    return this.#store.snippets().map(({ name, program, description }) => ({ name, program, ...(description !== null ? { description } : {}) }));
  }

  close(): void {
    this.#store.close();
  }
}
