// Shape checks for everything the carrier sends. Each returns a description of the first problem,
// or undefined when the message is well formed.
import type { RunOutcome } from '../../wire/messages.ts';

type Check = string | undefined;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Checks the carrier's first line against this host's protocol revision. */
export function checkHandshake(message: unknown, revision: number): Check {
  if (!isObject(message) || message.t !== 'hello') return 'the carrier did not start with a handshake';
  if (message.revision !== revision) {
    return `carrier protocol revision ${JSON.stringify(message.revision)} does not match host revision ${revision}; use a bootstrap built with this ptc`;
  }
  if (typeof message.node !== 'string' || !Array.isArray(message.capabilities)) return 'malformed handshake';
  if (typeof message.key !== 'string' || !/^[0-9a-f]{64}$/.test(message.key)) return 'malformed handshake: the channel key must be 64 hex digits';
  return undefined;
}

/** Checks an RPC frame: a request the host serves, or a reply to one of the host's calls. */
export function checkFrame(message: unknown): Check {
  if (!isObject(message)) return 'not an object';
  if (message.t === 's') {
    if (typeof message.i !== 'string') return 'reply without an id';
    return undefined;
  }
  if (message.t !== 'q') return `unknown frame type ${JSON.stringify(message.t)}`;
  if (message.i !== undefined && typeof message.i !== 'string') return 'request id must be a string';
  const args = message.a;
  if (!Array.isArray(args)) return 'request arguments must be an array';
  switch (message.m) {
    case 'invoke':
      return args.length === 2 && typeof args[0] === 'string' && typeof args[1] === 'string' ? undefined : 'invoke takes a binding name and argument text';
    case 'initialized':
      return args.length === 0 && typeof message.i === 'string' ? undefined : 'initialized takes no arguments and needs a reply';
    case 'registerImage':
      return args.length === 3 && typeof args[0] === 'string' && isIdentity(args[1]) && isPixels(args[2]) ? undefined : 'registerImage takes a path, the file\'s {dev, ino} and its {width, height}';
    case 'output':
      return args.length === 1 ? checkOutput(args[0]) : 'output takes one entry';
    case 'started':
      return args.length === 0 && message.i === undefined ? undefined : 'started takes no arguments and no reply';
    case 'yieldControl':
      return args.length === 0 && message.i === undefined ? undefined : 'yieldControl takes no arguments and no reply';
    default:
      return `unknown method ${JSON.stringify(message.m)}`;
  }
}

function isIdentity(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { dev, ino } = value as Record<string, unknown>;
  return typeof dev === 'string' && /^\d{1,20}$/.test(dev) && typeof ino === 'string' && /^\d{1,20}$/.test(ino) && Object.keys(value).length === 2;
}

function checkOutput(entry: unknown): Check {
  if (!isObject(entry)) return 'output entry must be an object';
  if (entry.type === 'text') {
    if (typeof entry.text !== 'string') return 'text output without text';
    return entry.stream === undefined || entry.stream === 'stderr' ? undefined : `text output stream must be "stderr" or absent, got ${JSON.stringify(entry.stream)}`;
  }
  if (entry.type === 'image') return typeof entry.attachmentId === 'string' ? undefined : 'image output without an attachment id';
  return `unknown output type ${JSON.stringify(entry.type)}`;
}

/** Checks the carrier's answer to run(). */
export function checkRunOutcome(outcome: unknown): Check {
  if (!isObject(outcome)) return 'not an object';
  const value = outcome as Partial<RunOutcome> & Record<string, unknown>;
  if (value.denied !== undefined && typeof value.denied !== 'boolean') return 'denied must be a boolean';
  if (value.cpuMs !== undefined && !(typeof value.cpuMs === 'number' && Number.isFinite(value.cpuMs) && value.cpuMs >= 0)) return 'cpuMs must be a non-negative number';
  if (value.hidden !== undefined && !(Array.isArray(value.hidden) && value.hidden.length <= 8 && value.hidden.every((path) => typeof path === 'string' && path.startsWith('/') && path.length <= 4096))) return 'hidden must be at most 8 absolute paths';
  switch (value.status) {
    case 'ok':
      if (value.display !== undefined && typeof value.display !== 'string') return 'display must be a string';
      return value.value === undefined || typeof value.value === 'string' ? undefined : 'value must be JSON text';
    case 'stopped':
      return undefined;
    case 'oversized':
      return Number.isSafeInteger(value.bytes) ? undefined : 'oversized without a byte count';
    case 'invalid-output':
      if (value.truncated !== undefined && typeof value.truncated !== 'boolean') return 'invalid-output truncated must be a boolean';
      return typeof value.path === 'string' && typeof value.message === 'string' ? undefined : 'invalid-output without path and message';
    case 'exception': {
      if (value.truncated !== undefined && typeof value.truncated !== 'boolean') return 'exception truncated must be a boolean';
      const error = value.error;
      if (!isObject(error) || typeof error.name !== 'string' || typeof error.message !== 'string') return 'exception without name and message';
      if (value.initializer !== undefined && typeof value.initializer !== 'boolean') return 'exception initializer must be a boolean';
      for (const field of ['stack', 'excerpt', 'binding', 'code']) {
        if (error[field] !== undefined && typeof error[field] !== 'string') return `exception ${field} must be a string`;
      }
      const location = error.location;
      if (location !== undefined && (!isObject(location) || !Number.isSafeInteger(location.line) || !Number.isSafeInteger(location.column))) {
        return 'exception location must have integer line and column';
      }
      return undefined;
    }
    default:
      return `unknown status ${JSON.stringify(value.status)}`;
  }
}

function isPixels(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { width, height, ...rest } = value as Record<string, unknown>;
  const dimension = (n: unknown): boolean => typeof n === 'number' && Number.isSafeInteger(n) && n > 0;
  return Object.keys(rest).length === 0 && dimension(width) && dimension(height);
}
