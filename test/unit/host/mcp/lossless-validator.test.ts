// The output-schema validator ptc's upstream clients use: a bigint (how a stdio upstream's integer
// past 2^53 is read) passes "integer" and "number" bounds as its nearest double, the value handed
// back is the exact input, and what the schema refuses is still refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LosslessSchemaValidator } from '../../../../host/mcp/lossless-validator.ts';

const schema = { type: 'object', properties: { id: { type: 'integer', minimum: 0 }, tags: { type: 'array', items: { type: 'integer' } } }, required: ['id'] } as const;

test('a bigint passes "integer", deep too, and the exact value comes back', () => {
  const validate = new LosslessSchemaValidator().getValidator<{ id: bigint }>(schema);
  const input = { id: 12345678901234567891n, tags: [1, 2n ** 70n] };
  const result = validate(input);
  assert.ok(result.valid, result.errorMessage);
  assert.is(result.data, input);
  assert.is((result.data as unknown as typeof input).id, 12345678901234567891n);
});

test('what the schema refuses is refused: a string id, a negative bigint under minimum 0, a missing field', () => {
  const validate = new LosslessSchemaValidator().getValidator(schema);
  for (const input of [{ id: '12345678901234567891' }, { id: -(2n ** 60n) }, { tags: [1n] }]) {
    const result = validate(input);
    assert.not.ok(result.valid, JSON.stringify(input, (_key, value) => (typeof value === 'bigint' ? `${value}n` : value)));
  }
});

test.run();
