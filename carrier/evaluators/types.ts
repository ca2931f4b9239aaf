// The contract every evaluator implements. An evaluator owns how source becomes running code in
// one realm (the main context, or a vm context it creates) and keeps whatever state its format
// retains between evaluations; the carrier owns bindings, output, revocation and the wire.

export type { ImportSetup } from '../imports/setup.ts';

import type { ProgramFormat } from '../../wire/messages.ts';

/** The formats an evaluator implements: the wire's program formats. */
export type EvaluatorFormat = ProgramFormat;

export interface EvaluationOptions {
  /** Absolute file name used in stack traces (and as the referrer of the first call's imports). */
  filename: string;
  /** The working directory this evaluation runs in (the carrier has already chdir'ed to it). */
  cwd: string;
  /** Whether the completion value will be used; when false an evaluator may skip producing it. */
  wantCompletion: boolean;
}

/** A completion value in a box, so that promise resolution never looks inside it. */
export interface Completion {
  value: unknown;
}

export interface Evaluator {
  readonly format: EvaluatorFormat;
  /**
   * The global object programs see. The carrier defines inspect, Image, BindingError and the
   * binding proxies on it before the first evaluation (and again when bindings change).
   */
  readonly globalObject: Record<string, unknown>;
  /**
   * Compiles and starts one program. Resolves with the completion, boxed so that a Promise
   * completion is not adopted: for formats that await their completion (async-function,
   * vm-script) the settled value, for the REPL formats the last expression statement's value as it
   * is (a Promise stays a Promise).
   * Source that does not compile rejects with the engine's SyntaxError (message and location kept,
   * no evaluator frames in its stack); runtime errors reject with the thrown value.
   */
  evaluate(program: string, options: EvaluationOptions): Promise<Completion>;
  /**
   * For completion between runs (run/complete.ts): the value of a retained top-level name that is
   * not a property of the global object, found without running program code; undefined when none.
   */
  lookup?(name: string): { value: unknown } | undefined;
  /** Retained top-level names that are not global properties, where the evaluator keeps them itself. */
  names?(): string[];
  /** Releases caches and hooks; the evaluator is not used again. */
  dispose(): void;
}
