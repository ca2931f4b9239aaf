// Output-schema validation that takes ptc's exact values. A stdio upstream's messages are read
// losslessly, so an integer past 2^53 in structuredContent is a bigint, which the SDK's validator
// (Ajv, through JSON Schema's "integer" and "number") does not know and refuses. This validator
// checks a copy in which each bigint is the nearest double (an integer still, so "integer" holds),
// and on success hands back the original, exact value.
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';

/** The SDK's Ajv validator, given bigints as the nearest doubles and returning the exact input. */
export class LosslessSchemaValidator implements jsonSchemaValidator {
  readonly #ajv = new AjvJsonSchemaValidator();

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const validate = this.#ajv.getValidator<T>(schema);
    return (input) => {
      const result = validate(withDoubles(input));
      return result.valid ? { valid: true, data: input as T, errorMessage: undefined } : result;
    };
  }
}

/** A copy with every bigint a double; the value itself when it holds none. Iterative: the upstream chooses the depth. */
function withDoubles(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (typeof value !== 'object' || value === null || !holdsBigInt(value)) return value;
  const copy: unknown = Array.isArray(value) ? [] : {};
  const pending: Array<[Record<string, unknown>, Record<string, unknown>]> = [[value as Record<string, unknown>, copy as Record<string, unknown>]];
  while (pending.length > 0) {
    const [from, to] = pending.pop()!;
    for (const key of Object.keys(from)) {
      const item = from[key];
      let made: unknown = item;
      if (typeof item === 'bigint') made = Number(item);
      else if (typeof item === 'object' && item !== null) {
        made = Array.isArray(item) ? [] : {};
        pending.push([item as Record<string, unknown>, made as Record<string, unknown>]);
      }
      Object.defineProperty(to, key, { value: made, writable: true, enumerable: true, configurable: true });
    }
  }
  return copy;
}

function holdsBigInt(value: object): boolean {
  const pending: object[] = [value];
  while (pending.length > 0) {
    const holder = pending.pop()! as Record<string, unknown>;
    for (const key of Object.keys(holder)) {
      const item = holder[key];
      if (typeof item === 'bigint') return true;
      if (typeof item === 'object' && item !== null) pending.push(item);
    }
  }
  return false;
}
