// JSON text of a result for the front ends (`ptc run --json`, `ptc serve`, `ptc runs --json`,
// `ptc/ai`): the wire's lossless writer (wire/json.ts), which the carrier encodes with too, so
// big integers stay digits and a value nested as deep as memory allows is still written (it keeps
// its own stack). Members that are undefined are left out, as JSON.stringify leaves them.
import { encodeJson } from '../../wire/json.ts';

export interface JsonTextOptions {
  /** Write -0 as `-0`; JSON.stringify writes it as `0`. @default false */
  negativeZero?: boolean;
}

/** The JSON text of a result or a part of one; undefined for undefined, which JSON cannot hold. */
export function jsonText(value: unknown, options: JsonTextOptions = {}): string | undefined {
  if (value === undefined) return undefined;
  return encodeJson(value, 'value', { skipUndefinedMembers: true, dropZeroSign: options.negativeZero !== true });
}
