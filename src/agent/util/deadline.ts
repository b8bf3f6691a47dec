// Bounded waiting: nothing at shutdown may wait forever on a peer that stopped answering.

/** Resolves with true when `work` settles within `timeoutMs`, false when the time ran out first (work is left running). */
export async function settlesWithin(work: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, timeoutMs));
  });
  try {
    return await Promise.race([
      work.then(
        () => true as const,
        () => true as const,
      ),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
