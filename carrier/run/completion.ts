// A program's completion as the reply carries it: lossless JSON, or for `display` the text Node's
// REPL would show; too large for the output budget or one frame, it is reported by size.
import { inspect as utilInspect, types } from 'node:util';
import type { RunOutcome, RunRequest } from '../../wire/messages.ts';
import { encodeJson, LossyValueError } from '../../wire/json.ts';
import { byteLength, NativePromise, queueTask, then } from '../hardening/intrinsics.ts';
import { describeThrown } from './errors.ts';
import { REPLY_ENVELOPE } from './outcome-fit.ts';

const isPromise = types.isPromise;

/** The outcome of a completion value, or a promise of it for a displayed Promise. */
export function completionOutcome(value: unknown, request: RunRequest): RunOutcome | Promise<RunOutcome> {
  if (request.discardCompletion || value === undefined) return { status: 'ok' };
  if (request.display !== undefined) return displayOutcome(value, request, request.display.colors);
  if (isPromise(value)) {
    return { status: 'invalid-output', path: 'value', message: 'the completion value is a Promise: REPL results are not awaited, so end with `await <expression>`' };
  }
  try {
    const text = encodeJson(value, 'value', { isProxy: types.isProxy });
    // A value too big for the budget or for one frame is reported by size, not sent. Its JSON text
    // travels unescaped beside the frame's envelope, which maxMessageBytes does not count.
    const bytes = byteLength(text);
    if (bytes > request.maxOutputBytes || bytes > request.maxMessageBytes) return { status: 'oversized', bytes };
    return { status: 'ok', value: text };
  } catch (error) {
    if (error instanceof LossyValueError) {
      return { status: 'invalid-output', path: error.path, message: `the completion value is not lossless JSON: ${error.message}` };
    }
    return { status: 'exception', error: describeThrown(error, 'value') };
  }
}

/** The completion as Node's REPL shows it (its writer's options), for a person rather than a program. */
function displayOutcome(value: unknown, request: RunRequest, colors: boolean): RunOutcome | Promise<RunOutcome> {
  if (types.isPromise(value)) return displayPromise(value as Promise<unknown>, request, colors);
  let text: string;
  try {
    text = utilInspect(value, { showProxy: true, colors });
  } catch (error) {
    // A custom inspect method that throws is the program's exception, as in Node's REPL.
    return { status: 'exception', error: describeThrown(error, request.filename) };
  }
  return displayTooLarge(text, request) ?? { status: 'ok', display: text };
}

/**
 * A Promise completion is shown by its state, not through util.inspect of the promise itself: on
 * Node 20 that lists the async-hook symbols on every promise, including the carrier's own run
 * state (AsyncLocalStorage's store). A settled promise's reaction runs before a microtask queued
 * after it, so the state is known one tick later without waiting for a pending promise.
 */
function displayPromise(promise: Promise<unknown>, request: RunRequest, colors: boolean): Promise<RunOutcome> {
  let state: { value: unknown } | { reason: unknown } | undefined;
  then(
    promise,
    (value: unknown) => {
      state = { value };
    },
    (reason: unknown) => {
      state = { reason };
    },
  );
  return new NativePromise((resolve) => {
    queueTask(() => {
      const settled = state;
      if (settled === undefined) return resolve(displayed('<pending>', request));
      const inner = 'value' in settled ? displayOutcome(settled.value, request, colors) : displayOutcome(settled.reason, request, colors);
      const text = (inner as RunOutcome & { display?: string }).display;
      if (text === undefined) return resolve(inner as RunOutcome);
      resolve(displayed('value' in settled ? text : `<rejected> ${text}`, request));
    });
  });
}

/** A display string travels like a completion value: within the output budget and one reply frame. */
function displayTooLarge(text: string, request: RunRequest): RunOutcome | undefined {
  const bytes = byteLength(text);
  if (bytes > request.maxOutputBytes || byteLength(encodeJson(text, 'value')) > request.maxMessageBytes - REPLY_ENVELOPE) return { status: 'oversized', bytes };
  return undefined;
}

function displayed(inner: string, request: RunRequest): RunOutcome {
  const text = inner.includes('\n') ? `Promise {\n  ${inner.replaceAll('\n', '\n  ')}\n}` : `Promise { ${inner} }`;
  return displayTooLarge(text, request) ?? { status: 'ok', display: text };
}
