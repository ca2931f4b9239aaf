// `ptc serve` messages as text: what goes out is the wire's lossless writer, and what comes in is
// refused with the value quoted when it is no message, including an id no reply could echo.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeMessage, encodeMessage, ErrorCode, RpcError } from '../../../../host/serve/wire.ts';

test('a message goes out as one lossless line: big integers as digits, -0 as 0, undefined members left out', () => {
  const text = encodeMessage({ jsonrpc: '2.0', id: 1, result: { value: [12345678901234567890n, -0, 1.5], hint: undefined } });
  assert.is(text, '{"jsonrpc":"2.0","id":1,"result":{"value":[12345678901234567890,0,1.5]}}\n');
});

/** The RpcError decodeMessage throws for a line. */
function refusal(line: string): RpcError {
  try {
    decodeMessage(line);
  } catch (error) {
    if (error instanceof RpcError) return error;
    throw error;
  }
  throw new Error(`decodeMessage accepted ${line}`);
}

test('an id too large for a double (read as Infinity) is refused: no reply could echo it', () => {
  const error = refusal('{"jsonrpc":"2.0","id":1e400,"method":"run"}');
  assert.is(error.code, ErrorCode.invalidRequest);
  assert.is(error.message, 'id must be a string, a number or null, got Infinity');
  assert.is(error.id, null);
});

test('a refused value is quoted as lossless JSON text', () => {
  const params = refusal('{"jsonrpc":"2.0","id":7,"method":"run","params":[12345678901234567890,-0]}');
  assert.is(params.code, ErrorCode.invalidParams);
  assert.is(params.message, 'params of run must be an object (by name), got [12345678901234567890,0]');
  assert.is(params.id, 7);
  assert.is(refusal('{"id":{"a":[1]},"method":"run"}').message, 'id must be a string, a number or null, got {"a":[1]}');
  assert.is(refusal('{"id":1,"method":"run"}').message, 'jsonrpc must be "2.0", got nothing');
  assert.is(refusal('{"jsonrpc":2,"id":1,"method":"run"}').message, 'jsonrpc must be "2.0", got 2');
});

test.run();
