/**
 * The requests' deadlines on one timer per distinct duration, instead of a timer armed and
 * cleared for every request (a native timer each, on the main thread of every sign request).
 * Deadlines of one duration fall due in the order they were set, so each duration keeps a list
 * in that order and one timer armed for its head; a request answered in time is unlinked, and
 * the timer, when it fires for a head that is gone, re-arms for the next one (an idle signer
 * wakes once more, for the last request's deadline). A deadline
 * fires when its full duration has passed, as `setTimeout(fire, ms)` would: never early, and
 * late by no more than the timer's own lateness.
 */
export interface Deadline {
  /** Stops it from firing; a no-op once it fired or was cancelled. */
  cancel(): void;
}

class Entry implements Deadline {
  prev: Entry | undefined;
  next: Entry | undefined;
  constructor(
    readonly list: DueList,
    readonly due: number,
    readonly fire: () => void,
  ) {}

  cancel(): void {
    this.list.unlink(this);
  }
}

class DueList {
  head: Entry | undefined;
  tail: Entry | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly ms: number,
    private readonly now: () => number,
  ) {}

  add(fire: () => void): Entry {
    const entry = new Entry(this, this.now() + this.ms, fire);
    if (this.tail === undefined) this.head = entry;
    else {
      this.tail.next = entry;
      entry.prev = this.tail;
    }
    this.tail = entry;
    if (this.#timer === undefined) this.#arm(entry.due);
    return entry;
  }

  unlink(entry: Entry): void {
    if (entry.prev === undefined && this.head !== entry) return; // fired or cancelled before
    if (entry.prev) entry.prev.next = entry.next;
    else this.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else this.tail = entry.prev;
    entry.prev = entry.next = undefined;
  }

  #arm(due: number): void {
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, Math.ceil(due - this.now())));
    // The listener keeps the process alive, not a deadline left over from its last request.
    this.#timer.unref?.();
  }

  #expire(): void {
    this.#timer = undefined;
    const now = this.now();
    for (let head = this.head; head !== undefined && head.due <= now; head = this.head) {
      this.unlink(head);
      head.fire();
    }
    // A deadline set while one fired (a fire that starts another request) armed its own timer.
    if (this.head !== undefined && this.#timer === undefined) this.#arm(this.head.due);
  }
}

export class Deadlines {
  readonly #lists = new Map<number, DueList>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Calls `fire` once `ms` milliseconds have passed, unless cancelled before. */
  add(ms: number, fire: () => void): Deadline {
    let list = this.#lists.get(ms);
    if (list === undefined) {
      list = new DueList(ms, this.now);
      this.#lists.set(ms, list);
    }
    return list.add(fire);
  }

  /** Deadlines still pending (tests). */
  get pending(): number {
    let count = 0;
    for (const list of this.#lists.values()) {
      for (let entry = list.head; entry !== undefined; entry = entry.next) count++;
    }
    return count;
  }
}
