// Kept-alive connections to destinations on the HTTP forward path, by destination, as node:http's
// keep-alive Agent held them: one goes back when its response was read to the end and neither side
// asked to close. An idle one is unref'd, since it must not keep the host alive, and leaves the
// pool when the destination closes it or sends anything unasked.
import type { Upstream } from './upstream.ts';

export type Pool = {
  /** An idle connection to `key`, now in use, if there is one. */
  take(key: string): Upstream | undefined;
  /** Makes `upstream` idle under `key`. */
  give(key: string, upstream: Upstream): void;
  /** Destroys every idle connection. */
  destroy(): void;
};

export function createPool(): Pool {
  // Each idle connection with what undoes its idle listeners.
  const idle = new Map<string, Map<Upstream, () => void>>();
  const leave = (key: string, upstream: Upstream): void => {
    const entries = idle.get(key);
    const detach = entries?.get(upstream);
    if (detach === undefined) return;
    detach();
    entries!.delete(upstream);
    if (entries!.size === 0) idle.delete(key);
  };
  return {
    take(key) {
      const entries = idle.get(key);
      if (entries === undefined) return undefined;
      const [upstream] = entries.keys();
      leave(key, upstream!);
      upstream!.socket.ref();
      return upstream;
    },
    give(key, upstream) {
      const { socket } = upstream;
      if (socket.destroyed || !socket.writable || socket.readableEnded) return void socket.destroy();
      const gone = (): void => leave(key, upstream);
      const ended = (): void => void socket.destroy();
      socket.once('close', gone);
      socket.once('end', ended);
      // Bytes nobody asked for: the connection's framing is lost.
      upstream.reads.consume(() => {
        socket.destroy();
        return undefined;
      });
      let entries = idle.get(key);
      if (entries === undefined) idle.set(key, (entries = new Map()));
      entries.set(upstream, () => {
        socket.off('close', gone);
        socket.off('end', ended);
      });
      socket.unref();
    },
    destroy() {
      for (const entries of idle.values()) for (const upstream of entries.keys()) upstream.socket.destroy();
      idle.clear();
    },
  };
}
