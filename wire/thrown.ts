// How a value a binding threw is described in its reply: a string message, and a string code when
// it carries one. One rule for the host's dispatch (host/execution/bindings.ts) and for the
// resident pool's relay of `--bindings` calls (host/cli/resident-client.ts), so the program reads
// the same error either way.
import { inspect, types } from 'node:util';

/** The message and code of a thrown value, read once and defensively: the value may be anything (a BigInt, a Proxy, an object with a throwing getter). */
export function describeThrown(thrown: unknown): { message: string; code?: string } {
  let message: string;
  let code: unknown;
  try {
    if (typeof thrown === 'object' && thrown !== null && (types.isNativeError(thrown) || typeof (thrown as { message?: unknown }).message === 'string')) {
      message = String((thrown as { message?: unknown }).message);
      code = (thrown as { code?: unknown }).code;
    } else {
      message = typeof thrown === 'string' ? thrown : inspect(thrown, { depth: 4, breakLength: Infinity, maxStringLength: 10_000 });
    }
  } catch {
    message = 'the binding threw a value that cannot be described';
    code = undefined;
  }
  return typeof code === 'string' ? { message, code } : { message };
}
