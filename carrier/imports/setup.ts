// What an evaluator hands the import layer: the handler in force and which evaluation a calling
// module belongs to. It lives here, below the evaluators, so that imports/ never reaches up into
// evaluators/ for it.
import type { ProgramImportHandler } from './handler.ts';

/** How an evaluator's programs import when the run carries an import policy or handler. */
export interface ImportSetup {
  /** The handler in force: the carrier's current one (the policy of the run, then the runner's handler). */
  handler: () => ProgramImportHandler;
  /** The evaluation the calling code belongs to, while it is the active one; undefined once it ended. */
  evaluation: () => object | undefined;
  /** Whether any evaluation is active: the attribution left where the calling code is unknown (Node 20's loader thread). */
  busy: () => boolean;
  /** Whether the environment is retained: a late import then rejects; in a temporary one it never settles. */
  retained: boolean;
}
