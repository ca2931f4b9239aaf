// The declarations of the globals every program has besides its bindings (carrier/run/carrier.ts
// defines them: inspect, Image, BindingError, yieldControl), so that declarations a model reads, or a
// program is type-checked against, name everything the program may use. Node's own globals
// (process, console, timers) are @types/node's to declare.

/** TypeScript declarations of the runtime's own globals, for a description's code block. */
export const PROGRAM_GLOBALS = `/** Prints its arguments (strings as they are, other values as util.inspect shows them), one text group per call; an Image is shown as an image. */
declare function inspect(...values: unknown[]): void;
/** An image a tool returned or the program loaded; inspect(image) shows it. */
declare class Image {
  private constructor();
  readonly attachmentId: string;
  readonly path: string;
  readonly width: number;
  readonly height: number;
  /** Opens a PNG, JPEG, GIF or WebP file (relative to the working directory). */
  static fromFile(path: string): Promise<Image>;
}
/** What a failed tool call throws: the tool's message, the tool's name and a code (e.g. "UPSTREAM_DOWN"). */
declare class BindingError extends Error {
  private constructor();
  readonly binding: string;
  readonly code: string | undefined;
}
/** Hands control back to whoever waits on this run (a yielded run's next look answers now, with the output so far); the program keeps running. */
declare function yieldControl(): void;`;
