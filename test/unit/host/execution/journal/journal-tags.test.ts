// The journal's row tags (host/execution/journal/key.ts, store.ts) without a carrier: a fresh
// journal's rows verify, a journal from before tags (schema 1) has rows that are refused by name,
// the key must be a private 32-byte file, and a journal with a second name (a hard link) is refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, linkSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { journalKeyFile } from '../../../../../host/execution/journal/key.ts';
import { openJournal } from '../../../../../host/execution/journal/store.ts';

const dir = mkdtempSync(join(tmpdir(), 'ptc-journal-tags-'));
chmodSync(dir, 0o700);
const state = mkdtempSync(join(tmpdir(), 'ptc-journal-state-'));
const saved = process.env.XDG_STATE_HOME;
process.env.XDG_STATE_HOME = state;
test.after(() => {
  if (saved === undefined) delete process.env.XDG_STATE_HOME;
  else process.env.XDG_STATE_HOME = saved;
  rmSync(dir, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true });
});

test('rows the store writes carry a tag and read back; a changed field is refused by name', () => {
  const path = join(dir, 'fresh.db');
  const store = openJournal(path);
  store.insertRun('r', 'return 1', '{}');
  store.putCall({ runId: 'r', sequence: 1, binding: 'put', args: '["a"]', state: 'done', result: null, error: null, detail: null });
  store.setCallState('r', 1, 'reverted');
  store.setStatus('r', 'ok', '{"status":"ok"}');
  assert.equal(store.calls('r').map((call) => call.state), ['reverted']);
  assert.is(store.run('r')?.status, 'ok');
  store.close();
  const db = new DatabaseSync(path);
  assert.match((db.prepare('SELECT tag FROM calls').get() as { tag: string }).tag, /^[0-9a-f]{64}$/);
  db.prepare("UPDATE runs SET status = 'running'").run();
  db.close();
  const reopened = openJournal(path);
  assert.throws(() => reopened.run('r'), (error: Error) => error.message === `ptc journal: ${JSON.stringify(path)}: the row of run "r" does not carry the tag this host signs its rows with, so ptc did not write it (a forged row, or one from a ptc before row tags); nothing acts on it`);
  reopened.close();
});

test('a journal written before row tags (schema 1) is migrated, and its untagged rows are refused', () => {
  const path = join(dir, 'old.db');
  writeFileSync(path, '', { mode: 0o600 });
  const db = new DatabaseSync(path);
  db.exec(`CREATE TABLE runs (run_id TEXT PRIMARY KEY, status TEXT NOT NULL, program TEXT NOT NULL, request TEXT NOT NULL, result TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 1);
    CREATE TABLE calls (run_id TEXT NOT NULL REFERENCES runs(run_id), sequence INTEGER NOT NULL, binding TEXT NOT NULL, args TEXT NOT NULL, state TEXT NOT NULL, result TEXT, error TEXT, PRIMARY KEY (run_id, sequence));
    CREATE TABLE snippets (name TEXT PRIMARY KEY, program TEXT NOT NULL, description TEXT, created_at INTEGER NOT NULL);
    INSERT INTO runs VALUES ('old', 'waiting', 'return 1', '{}', NULL, 0, 0, 1);
    PRAGMA user_version = 1;`);
  db.close();
  const store = openJournal(path);
  assert.throws(() => store.runs(), /the row of run "old" does not carry the tag this host signs its rows with/);
  store.close();
});

test('a key that is not a private 32-byte file is refused, naming it', () => {
  const path = join(dir, 'keyed.db');
  openJournal(path).close();
  const key = journalKeyFile(path);
  chmodSync(key, 0o644);
  assert.throws(() => openJournal(path), (error: Error) => error.message.startsWith(`ptc journal: the key ${JSON.stringify(key)} is not a 32-byte file private to this user`));
  chmodSync(key, 0o600);
  openJournal(path).close();
});

test('a journal file with a second name (a hard link) is refused', () => {
  const path = join(dir, 'linked.db');
  openJournal(path).close();
  linkSync(path, join(dir, 'other-name.db'));
  assert.throws(() => openJournal(path), (error: Error) => error.message === `ptc journal: ${JSON.stringify(path)} has 2 hard links; the journal must have one name, outside every writable root`);
});

test.run();
