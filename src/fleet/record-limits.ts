// The most a Transition record may carry for the fleet to fold it (pure): lengths of its strings, names in Resources,
// tags. Well above anything IMDS and Azure produce (Azure: VM names ≤ 64 characters, 50 tags, 1,000 VMs in a
// placement group); a record past them comes from no agent and is rejected, counted as `too-large`.

export const recordLimits = {
  /** Characters in any string column but Description. */
  maxStringLength: 512,
  /** Characters in Description (IMDS's own text is one sentence). */
  maxDescriptionLength: 2048,
  /** Names in Resources. */
  maxResources: 1000,
  /** Tags of the reporting VM (Azure allows 50), and characters in a tag's name or value. */
  maxTags: 50,
  maxTagLength: 512,
} as const;

/** What in `record` exceeds the limits, naming the column, or undefined when nothing does. */
export function oversizeProblem(record: Readonly<Record<string, unknown>>): string | undefined {
  for (const [column, value] of Object.entries(record)) {
    const max = column === "Description" ? recordLimits.maxDescriptionLength : recordLimits.maxStringLength;
    if (typeof value === "string" && value.length > max) return `${column}: ${value.length} characters (most ${max})`;
  }
  const resources = record.Resources;
  if (Array.isArray(resources)) {
    if (resources.length > recordLimits.maxResources)
      return `Resources: ${resources.length} names (most ${recordLimits.maxResources})`;
    const long = resources.find((name) => typeof name === "string" && name.length > recordLimits.maxStringLength);
    if (long !== undefined) return `Resources: a name of ${String(long).length} characters`;
  }
  const tags = record.Tags;
  if (typeof tags === "object" && tags !== null) {
    const entries = Object.entries(tags);
    if (entries.length > recordLimits.maxTags) return `Tags: ${entries.length} tags (most ${recordLimits.maxTags})`;
    const long = entries.find(
      ([name, value]) => name.length > recordLimits.maxTagLength || String(value).length > recordLimits.maxTagLength,
    );
    if (long !== undefined) return `Tags: a tag longer than ${recordLimits.maxTagLength} characters`;
  }
  return undefined;
}
