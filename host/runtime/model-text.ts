// What a model reads of a run, shared by the front ends that hand results to a model (`ptc mcp`,
// `ptc/ai`), so a model sees the same text whichever way it reached ptc.
import type { Failure } from '../execution/failures.ts';

/** A failed run as text: its kind and message, then the stack, the excerpt, the binding and the environment's state. */
export function failureText(failure: Failure): string {
  const lines = [`program failed (${failure.kind}): ${failure.message}`];
  if (failure.kind === 'exception' && failure.stack) lines.push(failure.stack);
  if (failure.excerpt) lines.push(failure.excerpt);
  if (failure.truncated) lines.push('(this diagnostic was cut to fit the output budget)');
  if (failure.binding) lines.push(`binding: ${failure.binding}${failure.code ? ` (code ${failure.code})` : ''}`);
  if (failure.state) lines.push(`environment state: ${failure.state}`);
  return lines.join('\n');
}

/** The media type of an image the runtime accepted: it takes only PNG, JPEG, GIF and WebP, so their signatures are enough. */
export function imageMediaType(data: Buffer): string {
  if (data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (data[0] === 0xff && data[1] === 0xd8) return 'image/jpeg';
  if (data.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  return 'image/webp';
}
