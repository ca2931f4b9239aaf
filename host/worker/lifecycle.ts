// A lifecycle kept as one state value, moved only along the moves its table lists. Flags side by
// side (closed, exited, failing) can say things that never happen, such as a carrier both booting
// and exited; one value cannot, and a move the table does not list is a bug in this host,
// refused where it is made rather than carried on in a state nobody designed.

/** For each state, the states it may move to. */
export type Moves<State extends string> = { readonly [From in State]: readonly State[] };

/** One object's lifecycle: its state, changed only by the moves of its table. */
export class Lifecycle<State extends string> {
  readonly #name: string;
  readonly #moves: Moves<State>;
  #state: State;

  constructor(name: string, initial: State, moves: Moves<State>) {
    this.#name = name;
    this.#moves = moves;
    this.#state = initial;
  }

  get state(): State {
    return this.#state;
  }

  /** Moves to `next`; throws, naming both states, when the table has no such move. */
  to(next: State): void {
    if (!this.#moves[this.#state].includes(next)) throw new Error(`${this.#name}: no move from "${this.#state}" to "${next}"`);
    this.#state = next;
  }
}
