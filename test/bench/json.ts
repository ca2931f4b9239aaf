// The lossless writer's row of issue 19's table (section 21): wire/json.ts's encodeJson on a
// 1.4 MB result of plain records against the captured JSON.stringify on the same value, measured
// in the same run (target ≤ 1.2×). References beside it: the floor any writer that reads each
// member's descriptor (so that no getter runs) cannot go below, lossless-json's stringify (what
// the front ends wrote with before), and the encoder's own writing pass (a bigint in the value).
// `node test/bench/json.ts` prints the rows alone; jsonRows() gives them to the table.
import { types } from 'node:util';
import { stringify as losslessStringify } from 'lossless-json';
import { encodeJson } from '../../wire/json.ts';
import { printTargets, targetRow, type TargetRow } from './targets.ts';

const ROUNDS = 16;
const BATCH = 8;
const TARGET = { max: 1.2 };
/** The options the carrier encodes a result with (carrier/channel/channel.ts), less its replacer for errors. */
const CARRIER = { isProxy: types.isProxy, skipUndefinedMembers: true };

/** A run's result as a program returns one: 6,000 records of strings, numbers, flags, a list and an object. */
function records(): { rows: object[]; total: number } {
  const rows: object[] = [];
  for (let i = 0; i < 6000; i++) {
    rows.push({
      id: i,
      name: `user ${i}`,
      email: `user${i}@example.com`,
      score: i * 1.37,
      active: i % 3 === 0,
      tags: ['alpha', 'beta', `t${i % 17}`],
      address: { street: `${i} Main Street`, city: 'Springfield', zip: String(10000 + i) },
      note: i % 5 === 0 ? null : 'a "quoted" note\nwith a newline',
    });
  }
  return { rows, total: rows.length };
}

/** This thread's CPU time in ms: under a loaded machine it varies far less than wall time. */
function cpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** CPU ms per call, one median per case over rounds that interleave the cases (batches, for the clock's resolution). */
function measure(cases: Record<string, () => unknown>): Record<string, number> {
  const samples: Record<string, number[]> = {};
  for (const name of Object.keys(cases)) {
    samples[name] = [];
    for (let warm = 0; warm < 3; warm++) cases[name]!();
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(cases)) {
      const started = cpuMs();
      for (let call = 0; call < BATCH; call++) run();
      samples[name]!.push((cpuMs() - started) / BATCH);
    }
  }
  const medians: Record<string, number> = {};
  for (const [name, values] of Object.entries(samples)) medians[name] = values.sort((a, b) => a - b)[values.length >> 1]!;
  return medians;
}

/**
 * The floor of a writer that reads every member's descriptor: the reads alone over the same value,
 * then JSON.stringify. It proves nothing (no prototype, Proxy or cycle check) and is not a writer.
 */
function descriptorWalkThenStringify(value: object): string {
  const pending: object[] = [value];
  while (pending.length > 0) {
    const object = pending.pop()!;
    const keys = Array.isArray(object) ? null : Object.getOwnPropertyNames(object);
    const length = keys === null ? (object as unknown[]).length : keys.length;
    for (let at = 0; at < length; at++) {
      const member = Reflect.getOwnPropertyDescriptor(object, keys === null ? at : keys[at]!)!.value as unknown;
      if (typeof member === 'object' && member !== null) pending.push(member);
    }
  }
  return JSON.stringify(value);
}

/** Section 21's rows: the target row and its references, with a closing note when it misses. */
export function jsonRows(notes: string[] = []): TargetRow[] {
  const value = records();
  const withBigint = { ...value, checksum: 2n ** 70n };
  const text = JSON.stringify(value);
  if (encodeJson(value, 'value', CARRIER) !== text) throw new Error('bench: encodeJson wrote the records differently from JSON.stringify');
  const size = `${(text.length / 1e6).toFixed(1)} MB`;
  const times = measure({
    stringify: () => JSON.stringify(value),
    encodeJson: () => encodeJson(value, 'value', CARRIER),
    floor: () => descriptorWalkThenStringify(value),
    losslessJson: () => losslessStringify(value),
    ownPass: () => encodeJson(withBigint, 'value', CARRIER),
  });
  const floor = `${times.stringify!.toFixed(2)} ms JSON.stringify`;
  const figure = (name: string): string => `${times[name]!.toFixed(2)} ms`;
  const ratio = (name: string): number => times[name]! / times.stringify!;
  // A reference row: shown with its ratio, judged against nothing ("peer" is for other runtimes).
  const reference = (workload: string, name: string): TargetRow => ({ workload, figure: figure(name), floor, ratio: ratio(name), target: 'none', pass: undefined });
  const rows = [
    targetRow(`encodeJson, ${size} of plain records (CPU)`, figure('encodeJson'), floor, ratio('encodeJson'), TARGET),
    reference('  floor: one descriptor read per member, then JSON.stringify', 'floor'),
    reference('  lossless-json stringify (the front ends\' writer before)', 'losslessJson'),
    reference('  encodeJson\'s own writing pass (a bigint in the records)', 'ownPass'),
  ];
  if (!rows[0]!.pass) {
    notes.push(
      `encodeJson is ${ratio('encodeJson').toFixed(2)}× JSON.stringify on plain records: it reads every member from its descriptor so that no getter runs, ` +
        `and those reads with JSON.stringify after them, checking nothing else, already take ${ratio('floor').toFixed(2)}×; ` +
        'the rest is the per-object checks (Proxy, prototype, internal state, symbol and array keys, cycles).',
    );
  }
  return rows;
}

if (import.meta.main) {
  const notes: string[] = [];
  printTargets(jsonRows(notes), notes);
}
