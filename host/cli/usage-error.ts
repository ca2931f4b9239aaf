/** A usage or configuration problem: exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
