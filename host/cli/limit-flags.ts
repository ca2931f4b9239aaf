// The limit flags of `ptc run` and `ptc repl`, each with the config field it overrides: read by the
// ordinary parser (options.ts) and by `ptc run`'s fast path (resident-client.ts), which loads no more.

/** Flags that override numeric config fields; each is read by numberFlag(). */
export const LIMIT_FLAGS = {
  'timeout-ms': 'timeoutMs',
  'max-timeout-ms': 'maxTimeoutMs',
  'max-output-bytes': 'maxOutputBytes',
  'max-old-generation-size-mb': 'maxOldGenerationSizeMb',
  'cpu-time-ms': 'cpuTimeMs',
  'max-memory-mb': 'maxMemoryMb',
  'max-disk-mb': 'maxDiskMb',
  'max-message-bytes': 'maxMessageBytes',
  'max-pending-calls': 'maxPendingCalls',
  'grace-ms': 'graceMs',
} as const;
