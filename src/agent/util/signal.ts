// A synchronous signal between the agent's stages: followers subscribe once, and each announcement reaches every one
// of them, in the order they followed.

export class Signal<T> {
  private readonly followers: Array<(value: T) => void> = [];

  /** `follower` hears of every later announcement, after those that followed before it. */
  follow(follower: (value: T) => void): void {
    this.followers.push(follower);
  }

  announce(value: T): void {
    for (const follower of this.followers) follower(value);
  }
}
