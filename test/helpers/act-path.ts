// The agent's path from an IMDS document to its actions, in-process: a fresh store with the commit, collect and act
// stages wired as pipeline/agent.ts wires them (the act stage follows the commit's records-committed signal and the
// collect stage's document-read signal), without the poll loop: a test hands it the documents it fetched itself.
import { join } from "node:path";
import type { RecordIdentity, SefRecord } from "../../src/contract/record.js";
import type { PostStartRequest } from "../../src/agent/actions/action.js";
import type { AgentConfig } from "../../src/agent/config/schema.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import type { ScheduledEventsDocument } from "../../src/agent/imds/document.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { ActStage } from "../../src/agent/pipeline/act-stage.js";
import { CollectStage } from "../../src/agent/pipeline/collect-stage.js";
import { CommitStage } from "../../src/agent/pipeline/commit-stage.js";
import { DocumentsRead } from "../../src/agent/pipeline/documents-read.js";
import { systemClock } from "../../src/runtime/clock.js";
import { openOutbox } from "./outbox.js";

export interface ActPath {
  /** The act stage: the actions every registry entry made from the configuration, and their runner. */
  readonly act: ActStage;
  /** Collects, commits and announces one document, as the agent does with each one it polls. */
  ingest(document: ScheduledEventsDocument): void;
  /** Every record in the outbox, oldest first: the transitions and the actions' records. */
  records(): SefRecord[];
  /** Closes the store (stop the act stage first). */
  close(): void;
}

export interface ActPathOptions {
  /** The parsed configuration: its `dataDir` holds the store, each action reads its own section. */
  readonly config: AgentConfig;
  /** The VM identity and AgentId records carry. */
  readonly vm: RecordIdentity;
  /** The approval's transport (the agent's IMDS client's POST). */
  readonly postStartRequest: PostStartRequest;
  readonly env?: NodeJS.ProcessEnv;
}

/** Opens the store, makes the actions (`ActStage.prepare`) and starts them, as the agent does before its first poll. */
export async function openActPath(options: ActPathOptions): Promise<ActPath> {
  const { config, vm, postStartRequest } = options;
  const outbox = openOutbox({ dataDir: config.dataDir, maxOutboxBytes: config.maxOutboxBytes });
  const clock = systemClock;
  const logger = silentLogger();
  const metrics = new AgentMetrics();
  const agentVersion = "0.0.0-act-path";
  const commit = new CommitStage({
    outbox,
    deadLetters: new DeadLetterFile(join(config.dataDir, "dead-letter")),
    metrics,
    logger,
    clock,
    maxOutboxBytes: config.maxOutboxBytes,
  });
  const documentsRead = new DocumentsRead();
  const collect = new CollectStage(outbox.collectorState.load(), {
    config,
    commit,
    vm: () => vm,
    agentVersion,
    metrics,
    logger,
    recallEmitted: (wanted) => outbox.collectorState.emittedKeysOf(wanted),
    documentsRead,
  });
  const act = new ActStage({
    config,
    store: outbox.opened,
    outbox,
    commit,
    documentsRead,
    postStartRequest,
    vm: () => vm,
    hasPolled: () => true,
    clock,
    logger,
    metrics,
    agentVersion,
    env: options.env ?? {},
  });
  await act.prepare();
  act.start();
  return {
    act,
    ingest: (document) => void collect.ingest(document, clock.now(), 0),
    records: () => outbox.readAfter(0, 10_000).map((entry) => entry.record),
    close: () => outbox.close(),
  };
}
