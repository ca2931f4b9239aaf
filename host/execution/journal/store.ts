// The journal file: one SQLite database (node:sqlite, built into Node), WAL mode, each journaled
// call its own short transaction committed before the program sees the call's answer, so a call
// whose answer reached the program is on disk; SQLite's WAL recovery makes a write torn by a kill
// disappear at the next open rather than corrupt what was committed. The schema version is
// PRAGMA user_version, with forward migrations. Every row carries a tag (key.ts) that the store
// checks whenever it reads the row: a row written by anything but this store is refused, by name,
// before resume, revert or a snippet acts on it.
import { closeSync, constants, lstatSync, openSync, realpathSync, statSync } from 'node:fs';
import { timingSafeEqual } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { journalKey, rowTag } from './key.ts';

export type RunStatus = 'running' | 'waiting' | 'ok' | 'failed';
/** waiting: for approval; started: running (in doubt after a crash); done/failed: answered; rejected: by a person or the approval timeout; reverted: rolled back. */
export type CallState = 'waiting' | 'started' | 'done' | 'failed' | 'rejected' | 'reverted';

export interface StoredRun {
  runId: string;
  status: RunStatus;
  program: string;
  /** The resolved request the run can be resumed with (JSON). */
  request: string;
  /** The result, once the run has one (JSON). */
  result: string | null;
  createdAt: number;
  updatedAt: number;
  attempts: number;
}

export interface StoredCall {
  runId: string;
  sequence: number;
  binding: string;
  /** The arguments as the carrier sent them: lossless JSON text. */
  args: string;
  state: CallState;
  /** done: the result's JSON text (null for undefined) and its images; failed/rejected: {message, code}. */
  result: string | null;
  error: string | null;
  /** What else the journal knows of the call (JSON, CallDetail): its attempt, the approval decision, a reconcile answer. */
  detail: string | null;
}

const MIGRATIONS: string[] = [
  `CREATE TABLE runs (
     run_id TEXT PRIMARY KEY, status TEXT NOT NULL, program TEXT NOT NULL, request TEXT NOT NULL,
     result TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 1);
   CREATE TABLE calls (
     run_id TEXT NOT NULL REFERENCES runs(run_id), sequence INTEGER NOT NULL, binding TEXT NOT NULL, args TEXT NOT NULL,
     state TEXT NOT NULL, result TEXT, error TEXT, PRIMARY KEY (run_id, sequence));
   CREATE TABLE snippets (name TEXT PRIMARY KEY, program TEXT NOT NULL, description TEXT, created_at INTEGER NOT NULL);`,
  // 2: each row's tag. Rows of a version-1 journal have none, so they are refused when read.
  `ALTER TABLE runs ADD COLUMN tag TEXT;
   ALTER TABLE calls ADD COLUMN tag TEXT;
   ALTER TABLE snippets ADD COLUMN tag TEXT;`,
  // 3: each call's detail: its attempt, the approval decision that let it run or stopped it, a reconcile answer.
  `ALTER TABLE calls ADD COLUMN detail TEXT;`,
];

/** Opens (creating 0600 when missing) the journal at an absolute path in a directory the user owns. */
export function openJournal(path: string): JournalStore {
  checkPlace(path);
  const key = journalKey(journalRealPath(path));
  const sqlite = process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite');
  const db = new sqlite.DatabaseSync(path, { timeout: 5_000 });
  try {
    db.exec('PRAGMA journal_mode = WAL');
    // FULL: a commit is on disk before the program hears the call's answer.
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    migrate(db, path);
  } catch (error) {
    db.close();
    throw error;
  }
  return new JournalStore(db, key, path);
}

/** The journal's path with its directory's symlinks resolved (the file itself is never a link: checkPlace). */
export function journalRealPath(path: string): string {
  return join(realpathSync(dirname(path)), basename(path));
}

function checkPlace(path: string): void {
  const dir = dirname(path);
  let info;
  try {
    info = statSync(dir);
  } catch (error) {
    throw new Error(`ptc journal: the directory ${JSON.stringify(dir)} of the journal does not exist (${(error as NodeJS.ErrnoException).code})`);
  }
  const uid = process.getuid?.();
  if (!info.isDirectory()) throw new Error(`ptc journal: ${JSON.stringify(dir)} is not a directory`);
  if (uid !== undefined && info.uid !== uid) throw new Error(`ptc journal: the directory ${JSON.stringify(dir)} belongs to uid ${info.uid}, not to this user (uid ${uid})`);
  if ((info.mode & 0o022) !== 0) throw new Error(`ptc journal: the directory ${JSON.stringify(dir)} is writable by others (mode ${(info.mode & 0o777).toString(8)}); the journal decides what runs again`);
  let file;
  try {
    file = lstatSync(path);
  } catch {
    // Created here, 0600, so SQLite's WAL and shared-memory files (which copy its mode) are private too.
    closeSync(openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600));
    return;
  }
  if (!file.isFile()) throw new Error(`ptc journal: ${JSON.stringify(path)} is not a regular file`);
  // Another name for the same file could sit where a program writes.
  if (file.nlink !== 1) throw new Error(`ptc journal: ${JSON.stringify(path)} has ${file.nlink} hard links; the journal must have one name, outside every writable root`);
  if (uid !== undefined && file.uid !== uid) throw new Error(`ptc journal: ${JSON.stringify(path)} belongs to uid ${file.uid}, not to this user (uid ${uid})`);
  if ((file.mode & 0o077) !== 0) throw new Error(`ptc journal: ${JSON.stringify(path)} is readable or writable by others (mode ${(file.mode & 0o777).toString(8)}); chmod 600 it`);
}

function migrate(db: DatabaseSync, path: string): void {
  const version = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version);
  if (version > MIGRATIONS.length) throw new Error(`ptc journal: ${JSON.stringify(path)} has schema version ${version}, newer than this ptc knows (${MIGRATIONS.length})`);
  for (let next = version; next < MIGRATIONS.length; next++) {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(MIGRATIONS[next]!);
      db.exec(`PRAGMA user_version = ${next + 1}`);
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }
}

const runColumns = 'run_id AS runId, status, program, request, result, created_at AS createdAt, updated_at AS updatedAt, attempts, tag';
const callColumns = 'run_id AS runId, sequence, binding, args, state, result, error, detail, tag';
const snippetColumns = 'name, program, description, tag';

type Tagged<T> = T & { tag: string | null };
type StoredSnippet = { name: string; program: string; description: string | null };

export class JournalStore {
  readonly #db: DatabaseSync;
  readonly #key: Buffer;
  readonly #path: string;

  constructor(db: DatabaseSync, key: Buffer, path: string) {
    this.#db = db;
    this.#key = key;
    this.#path = path;
  }

  insertRun(runId: string, program: string, request: string): void {
    const now = Date.now();
    this.#db.prepare('INSERT INTO runs (run_id, status, program, request, created_at, updated_at, tag) VALUES (?, ?, ?, ?, ?, ?, ?)').run(runId, 'running', program, request, now, now, this.#runTag({ runId, status: 'running', program, request, result: null }));
  }

  /** A new attempt at a journaled run (a resume). */
  reopenRun(runId: string): void {
    const run = this.#checkedRun(runId);
    this.#db.prepare("UPDATE runs SET status = 'running', attempts = attempts + 1, updated_at = ?, tag = ? WHERE run_id = ?").run(Date.now(), this.#runTag({ ...run, status: 'running' }), runId);
  }

  setStatus(runId: string, status: RunStatus, result?: string): void {
    const run = this.#checkedRun(runId);
    const next = { ...run, status, result: result ?? run.result };
    this.#db.prepare('UPDATE runs SET status = ?, result = ?, updated_at = ?, tag = ? WHERE run_id = ?').run(status, next.result, Date.now(), this.#runTag(next), runId);
  }

  run(runId: string): StoredRun | undefined {
    const row = this.#db.prepare(`SELECT ${runColumns} FROM runs WHERE run_id = ?`).get(runId) as Tagged<StoredRun> | undefined;
    return row === undefined ? undefined : this.#verifiedRun(row);
  }

  runs(): StoredRun[] {
    return (this.#db.prepare(`SELECT ${runColumns} FROM runs ORDER BY created_at, rowid`).all() as unknown as Array<Tagged<StoredRun>>).map((row) => this.#verifiedRun(row));
  }

  calls(runId: string): StoredCall[] {
    return (this.#db.prepare(`SELECT ${callColumns} FROM calls WHERE run_id = ? ORDER BY sequence`).all(runId) as unknown as Array<Tagged<StoredCall>>).map((row) => this.#verifiedCall(row));
  }

  /** Records a call, or moves a journaled one to a new state; each is one committed transaction. */
  putCall(call: StoredCall): void {
    this.#db
      .prepare('INSERT INTO calls (run_id, sequence, binding, args, state, result, error, detail, tag) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, sequence) DO UPDATE SET state = excluded.state, result = excluded.result, error = excluded.error, detail = excluded.detail, tag = excluded.tag')
      .run(call.runId, call.sequence, call.binding, call.args, call.state, call.result, call.error, call.detail, this.#callTag(call));
  }

  setCallState(runId: string, sequence: number, state: CallState): void {
    const row = this.#db.prepare(`SELECT ${callColumns} FROM calls WHERE run_id = ? AND sequence = ?`).get(runId, sequence) as Tagged<StoredCall> | undefined;
    if (row === undefined) throw new Error(`ptc journal: ${JSON.stringify(this.#path)} has no call ${sequence} of run ${JSON.stringify(runId)}`);
    const call = { ...this.#verifiedCall(row), state };
    this.#db.prepare('UPDATE calls SET state = ?, tag = ? WHERE run_id = ? AND sequence = ?').run(state, this.#callTag(call), runId, sequence);
  }

  putSnippet(name: string, program: string, description: string | null): void {
    this.#db.prepare('INSERT INTO snippets (name, program, description, created_at, tag) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET program = excluded.program, description = excluded.description, tag = excluded.tag').run(name, program, description, Date.now(), this.#snippetTag({ name, program, description }));
  }

  snippet(name: string): StoredSnippet | undefined {
    const row = this.#db.prepare(`SELECT ${snippetColumns} FROM snippets WHERE name = ?`).get(name) as Tagged<StoredSnippet> | undefined;
    return row === undefined ? undefined : this.#verifiedSnippet(row);
  }

  snippets(): StoredSnippet[] {
    return (this.#db.prepare(`SELECT ${snippetColumns} FROM snippets ORDER BY name`).all() as unknown as Array<Tagged<StoredSnippet>>).map((row) => this.#verifiedSnippet(row));
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  // The fields a tag covers: all that decide what resume, revert and snippets do. Timestamps and
  // the attempt count are the audit's, not the host's decisions, and are left out.
  #runTag(run: { runId: string; status: string; program: string; request: string; result: string | null }): string {
    return rowTag(this.#key, ['run', run.runId, run.status, run.program, run.request, run.result]);
  }

  // A row without detail (all rows of a version-2 journal) keeps the tag it was written with; a
  // row with one has it covered, so removing it breaks the tag as changing it does.
  #callTag(call: StoredCall): string {
    const fields = ['call', call.runId, call.sequence, call.binding, call.args, call.state, call.result, call.error];
    return rowTag(this.#key, call.detail === null || call.detail === undefined ? fields : [...fields, call.detail]);
  }

  #snippetTag(snippet: StoredSnippet): string {
    return rowTag(this.#key, ['snippet', snippet.name, snippet.program, snippet.description]);
  }

  #checkedRun(runId: string): StoredRun {
    const run = this.run(runId);
    if (run === undefined) throw new Error(`ptc journal: ${JSON.stringify(this.#path)} has no run ${JSON.stringify(runId)}`);
    return run;
  }

  #verifiedRun({ tag, ...run }: Tagged<StoredRun>): StoredRun {
    this.#verify(tag, () => this.#runTag(run), `run ${JSON.stringify(run.runId)}`);
    return run;
  }

  #verifiedCall({ tag, ...call }: Tagged<StoredCall>): StoredCall {
    this.#verify(tag, () => this.#callTag(call), `call ${call.sequence} of run ${JSON.stringify(call.runId)}`);
    return call;
  }

  #verifiedSnippet({ tag, ...snippet }: Tagged<StoredSnippet>): StoredSnippet {
    this.#verify(tag, () => this.#snippetTag(snippet), `snippet ${JSON.stringify(snippet.name)}`);
    return snippet;
  }

  #verify(tag: string | null, expected: () => string, row: string): void {
    const want = Buffer.from(expected(), 'hex');
    const got = typeof tag === 'string' && /^[0-9a-f]{64}$/.test(tag) ? Buffer.from(tag, 'hex') : undefined;
    if (got !== undefined && timingSafeEqual(got, want)) return;
    throw new Error(`ptc journal: ${JSON.stringify(this.#path)}: the row of ${row} does not carry the tag this host signs its rows with, so ptc did not write it (a forged row, or one from a ptc before row tags); nothing acts on it`);
  }
}
