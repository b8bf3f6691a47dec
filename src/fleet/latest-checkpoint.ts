// The checkpoint of one owned partition, written beside its batches rather than in their way: one write at a time, and
// a newer position replaces one still waiting. Nothing is skipped by it: a batch asks for its checkpoint only once its
// fold is durable, and the fold state itself holds the position that matters (a record at or below it is never folded
// again), so a checkpoint that lags only makes the partition's next owner read a few records it then skips.

/** Writes the newest position asked for, one write at a time (`write` retries by itself; a rejection is a bug, reported). */
export class LatestCheckpoint<Position> {
  private writing: Promise<void> | null = null;
  private waiting: { readonly position: Position } | null = null;

  constructor(
    private readonly write: (position: Position) => Promise<unknown>,
    private readonly onFailed: (err: unknown) => void,
  ) {}

  /** Asks for `position` to be written: at once when no write is in flight, else after it (replacing one waiting). */
  request(position: Position): void {
    this.waiting = { position };
    this.writing ??= this.writeWaiting();
  }

  /** Resolves once every position asked for so far was written (or its write gave up). */
  written(): Promise<void> {
    return this.writing ?? Promise.resolve();
  }

  private async writeWaiting(): Promise<void> {
    try {
      while (this.waiting !== null) {
        const { position } = this.waiting;
        this.waiting = null;
        await this.write(position).catch(this.onFailed);
      }
    } finally {
      this.writing = null;
    }
  }
}
