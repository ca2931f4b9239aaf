// For callers that switch a profile to retained execution: the three settings to merge together.
import type { ExecutionMode } from './config.ts';
import type { ProgramFormat } from '../../wire/messages.ts';

export interface PersistentExecution {
  executionMode: ExecutionMode;
  scriptPersistence: boolean;
  replScoped: boolean;
}

/**
 * The retained-execution settings for a profile whose programs have `format`. Script and scoped
 * REPL programs keep their syntax; function bodies and Node REPL statements move to
 * persistent-in-memory with its default, the scoped REPL. Merge all three fields at once.
 */
export function resolvePersistentExecution(format: ProgramFormat): PersistentExecution {
  switch (format) {
    case 'vm-script':
      return { executionMode: 'vm-script', scriptPersistence: true, replScoped: false };
    case 'scoped-repl':
    case 'async-function':
    case 'repl':
      return { executionMode: 'persistent-in-memory', scriptPersistence: false, replScoped: true };
    default:
      throw new RangeError(`resolvePersistentExecution: unknown program format ${JSON.stringify(format)}`);
  }
}
