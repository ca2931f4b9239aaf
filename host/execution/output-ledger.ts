// The outer result's byte budget. Text costs its UTF-8 bytes, an image its JSON descriptor and the
// completion its JSON text. When something does not fit, the ledger keeps the exact prefix that
// does (text cut on a character boundary) and refuses everything after.
import type { ImageDescriptor } from '../../wire/messages.ts';

/** Which standard stream text came from: stdout for inspect(), console.log and process.stdout; stderr for console.error, console.warn and process.stderr. */
export type OutputStream = 'stdout' | 'stderr';

export type OutputEntry =
  | { type: 'text'; text: string; stream: OutputStream }
  | ({ type: 'image' } & ImageDescriptor);

export class OutputLedger {
  readonly limit: number;
  #used = 0;
  #entries: OutputEntry[] = [];
  #overflowed = false;

  constructor(limit: number) {
    this.limit = limit;
  }

  get used(): number {
    return this.#used;
  }

  get overflowed(): boolean {
    return this.#overflowed;
  }

  /** Ordered entries, adjacent text of the same stream merged. */
  get entries(): OutputEntry[] {
    return this.#entries;
  }

  /** Records text; returns the part that fit (possibly empty), or undefined when nothing fit. */
  addText(text: string, stream: OutputStream = 'stdout'): string | undefined {
    if (this.#overflowed || text === '') return undefined;
    const bytes = Buffer.byteLength(text);
    let kept = text;
    if (this.#used + bytes > this.limit) {
      kept = fittingPrefix(text, this.limit - this.#used);
      this.#overflowed = true;
    }
    if (kept === '') return undefined;
    this.#used += Buffer.byteLength(kept);
    const last = this.#entries.at(-1);
    if (last?.type === 'text' && last.stream === stream) last.text += kept;
    else this.#entries.push({ type: 'text', text: kept, stream });
    return kept;
  }

  /** Records an image; false (and overflowed) when its descriptor does not fit. */
  addImage(image: ImageDescriptor): boolean {
    if (this.#overflowed) return false;
    const entry: OutputEntry = { type: 'image', ...image };
    const bytes = Buffer.byteLength(JSON.stringify(entry));
    if (this.#used + bytes > this.limit) {
      this.#overflowed = true;
      return false;
    }
    this.#used += bytes;
    this.#entries.push(entry);
    return true;
  }

  /** Charges the completion or diagnostic; false (and overflowed) when it does not fit. */
  charge(bytes: number): boolean {
    if (this.#overflowed) return false;
    if (this.#used + bytes > this.limit) {
      this.#overflowed = true;
      return false;
    }
    this.#used += bytes;
    return true;
  }

  /** Bytes still available. */
  get remaining(): number {
    return Math.max(0, this.limit - this.#used);
  }
}

/** The longest prefix of `text` whose UTF-8 encoding fits in `budget` bytes. */
export function fittingPrefix(text: string, budget: number): string {
  if (budget <= 0) return '';
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= budget) return text;
  let end = budget;
  // Back up over continuation bytes (10xxxxxx) so the cut never splits a character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
