// Reads Prometheus text exposition (what /metrics answers, what prom-client's registry prints): the value of exactly
// one series, named by its metric name and its whole label set, so an assertion on `…} 1` cannot pass on 10 or 11.

/** One sample line: its metric name, its labels and its value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?$/;
const labelPair = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  labelPair.lastIndex = 0;
  while (labelPair.lastIndex < text.length) {
    const start = labelPair.lastIndex;
    const m = labelPair.exec(text);
    if (!m || labelPair.lastIndex === start) throw new Error(`unreadable labels in exposition line: ${line}`);
    labels[m[1]!] = unescape(m[2]!);
  }
  return labels;
}

function parseValue(text: string): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  return Number(text);
}

/** Every sample of an exposition (comments and blank lines skipped); fails on a line it cannot read. */
export function parseExposition(exposition: string): Sample[] {
  return exposition.split("\n").flatMap((line) => {
    if (line.trim() === "" || line.startsWith("#")) return [];
    const m = sampleLine.exec(line);
    if (!m) throw new Error(`unreadable exposition line: ${line}`);
    return [{ name: m[1]!, labels: parseLabels(m[2] ?? "", line), value: parseValue(m[3]!) }];
  });
}

const sameLabels = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);

/**
 * The value of the one series `name` with exactly `labels` (no more, no fewer); fails naming the series found when
 * there is none or more than one.
 */
export function metricValue(exposition: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  const samples = parseExposition(exposition);
  const matching = samples.filter((s) => s.name === name && sameLabels(s.labels, labels));
  if (matching.length !== 1) {
    const seen = samples
      .filter((s) => s.name === name)
      .map((s) => `${JSON.stringify(s.labels)} ${s.value}`)
      .join("; ");
    throw new Error(
      `${matching.length === 0 ? "no" : `${matching.length}`} series ${name}${JSON.stringify(labels)} in the exposition (series of that name: ${seen || "none"})`,
    );
  }
  return matching[0]!.value;
}
