// The Node flags a benchmark's worker thread starts with: the parent's, less the export conditions a test runner adds
// (vitest passes `--conditions source`, which would resolve the built peers' `@sef/contract` imports to TypeScript).
export function plainWorkerExecArgv(parent: readonly string[] = process.execArgv): string[] {
  const kept: string[] = [];
  for (let i = 0; i < parent.length; i++) {
    const flag = parent[i]!;
    if (flag === "--conditions" || flag === "-C") i += 1;
    else if (!flag.startsWith("--conditions=")) kept.push(flag);
  }
  return kept;
}
