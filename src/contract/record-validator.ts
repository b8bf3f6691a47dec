// The record validator, built from the columns (pure, never throws): what a consumer may rely on in a Transition record
// it reads — every Transition column with a value of its type and JSON shape (null only where the column allows it),
// but the columns older agents did not write; a known status; ids that are not empty. The fleet reads its input with it.
import { shapeProblem, typeProblem } from "./column-values.js";
import { eventStatuses, recordColumns, transitionFieldNames, type TransitionRecord } from "./record.js";

/** The Transition columns older agents did not write (`absentInEarlierRecords` in `recordColumns`). */
export type EarlierAbsentColumn = "ObservedAt" | "Tags" | "AgentId";

/** A Transition record as consumers read it: the columns older agents did not write may be absent. */
export type ReadTransitionRecord = Omit<TransitionRecord, EarlierAbsentColumn> &
  Partial<Pick<TransitionRecord, EarlierAbsentColumn>>;

/** One thing wrong with a record, naming the column. */
export interface ColumnProblem {
  readonly column: string;
  readonly problem: string;
}

const transitionColumns = recordColumns.filter((c) => transitionFieldNames.includes(c.name));

/** What a Transition holds beyond its columns' types: the statuses it may name, the ids it may not leave empty. */
const transitionValues: Readonly<Record<string, readonly string[]>> = {
  RecordType: ["Transition"],
  EventStatus: eventStatuses,
  PreviousStatus: ["", ...eventStatuses],
};
const nonEmptyColumns: ReadonlySet<string> = new Set(["RecordId", "EventId"]);

/** The problems of `value` as a Transition record, one per column at most, in column order (empty: it is one). */
export function transitionProblems(value: Readonly<Record<string, unknown>>): ColumnProblem[] {
  const problems: ColumnProblem[] = [];
  for (const column of transitionColumns) {
    const problem = columnProblem(column, value[column.name]);
    if (problem !== undefined) problems.push({ column: column.name, problem });
  }
  return problems;
}

function columnProblem(column: (typeof transitionColumns)[number], value: unknown): string | undefined {
  if (value === undefined) return column.absentInEarlierRecords ? undefined : "missing";
  if (value === null) return column.nullable ? undefined : "null";
  const problem = typeProblem(column.type, value) ?? shapeProblem(column.json, value);
  if (problem !== undefined) return problem;
  const allowed = transitionValues[column.name];
  if (allowed !== undefined && !allowed.includes(value as string))
    return `${JSON.stringify(value)} is not one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`;
  if (nonEmptyColumns.has(column.name) && value === "") return "empty";
  return undefined;
}
