// `sef outbox status` and `drop-sink`, `sef dead-letter list`, `replay` and `purge`: look at and act on the delivery
// ledger. Reading commands open the store read-only and may run beside the agent; the others write and refuse while an
// agent runs. None of them creates a store (or a data directory) where there is none.
import { Option, type Command } from "commander";
import { Store } from "../../store/store.js";
import { Outbox } from "../../delivery/outbox.js";
import { StoreError } from "../../store/errors.js";
import { acquire as acquireDataDir, DataDirLockedError, type DataDirLock } from "../../store/data-dir-lock.js";
import { platformDataDir } from "../../config/data-dir.js";
import { DeadLetterFile } from "../../delivery/dead-letter.js";
import { sefCommandHint } from "../../util/sef-command-hint.js";
import { settingDefault } from "../setting-help.js";
import { existsSync } from "node:fs";
import { join } from "node:path";

/** `--data-dir`, the same for every ledger command: $SEF_DATA_DIR, else the setting's default. */
const dataDirOption = (): Option =>
  new Option("--data-dir <dir>", "the agent's data directory").default(
    process.env["SEF_DATA_DIR"] ?? platformDataDir(),
    `$SEF_DATA_DIR, else ${settingDefault("dataDir")}`,
  );
const exitCodes = { ok: 0, usage: 2, refused: 75, store: 78 } as const;

interface DataDirFlags {
  dataDir: string;
  json?: boolean;
}

/** `parent NAME` with `--data-dir`, the same for every ledger command. */
function ledgerCommand(parent: Command, name: string, description: string): Command {
  return parent.command(name).description(description).addOption(dataDirOption());
}

/** The action of a reading command: `body` on the store opened read-only (it may run beside the agent). */
function readingAction<Flags extends DataDirFlags>(
  body: (outbox: Outbox, flags: Flags) => void,
): (flags: Flags) => void {
  return (flags) => {
    process.exitCode = withReadOnlyStore(flags.dataDir, (outbox) => body(outbox, flags));
  };
}

export function registerLedgerCommands(program: Command): void {
  registerOutboxCommands(program);
  registerDeadLetterCommands(program);
}

/** `sef outbox status` and `sef outbox drop-sink`. */
function registerOutboxCommands(program: Command): void {
  const outbox = program.command("outbox").description("look at the outbox and its delivery ledger");
  ledgerCommand(
    outbox,
    "status",
    "per sink: pending records, oldest pending age, dead-lettered, delivered, last delivery (read-only)",
  )
    .option("--json", "one JSON object instead of a table")
    .action(readingAction(printOutboxStatus));
  ledgerCommand(
    outbox,
    "drop-sink",
    "give a sink up: its pending records go to dead-letter/<sink>.jsonl with the reason, then its rows leave the ledger; the agent must be stopped",
  )
    .argument("<name>", "the sink, as `sef outbox status` names it")
    .action((name: string, flags: DataDirFlags) => {
      process.exitCode = withAgentStopped(flags.dataDir, "drop a sink", (outbox) =>
        dropSink(outbox, name, flags.dataDir),
      );
    });
}

/** `sef dead-letter list`, `replay` and `purge`. */
function registerDeadLetterCommands(program: Command): void {
  const deadLetter = program.command("dead-letter").description("list, replay or purge dead-lettered deliveries");
  ledgerCommand(deadLetter, "list", "dead-lettered deliveries still held in the store, one JSON line each (read-only)")
    .option("--sink <name>", "only this sink (as `sef outbox status` names it)")
    .action(
      readingAction((outbox, flags: DataDirFlags & { sink?: string }) => {
        for (const d of outbox.deadLetters(flags.sink)) {
          process.stdout.write(
            `{"sink":${JSON.stringify(d.sink)},"seq":${d.seq},"recordId":${JSON.stringify(d.recordId)},"reason":${JSON.stringify(d.reason)},` +
              `"deadLetteredAt":${JSON.stringify(new Date(d.deadLetteredMs).toISOString())},"attempts":${d.attempts},"record":${d.json}}\n`,
          );
        }
      }),
    );
  ledgerCommand(
    deadLetter,
    "replay",
    "make dead-lettered deliveries pending again (same records, same RecordId); the agent must be stopped",
  )
    .option("--sink <name>", "only this sink")
    .option("--reason <text>", "only deliveries whose reason contains this text")
    .action((flags: DataDirFlags & { sink?: string; reason?: string }) => {
      process.exitCode = withAgentStopped(flags.dataDir, "replay", (outbox) => {
        const replayed = outbox.replayDeadLetters({
          ...(flags.sink ? { sink: flags.sink } : {}),
          ...(flags.reason ? { reasonContains: flags.reason } : {}),
        });
        process.stdout.write(JSON.stringify({ replayed: sum(replayed), bySink: Object.fromEntries(replayed) }) + "\n");
      });
    });
  ledgerCommand(
    deadLetter,
    "purge",
    "forget dead-lettered deliveries for good (their lines stay in dead-letter/<sink>.jsonl); the agent must be stopped",
  )
    .option("--sink <name>", "only this sink")
    .option("--reason <text>", "only deliveries whose reason contains this text")
    .option("--older-than-days <days>", "only deliveries dead-lettered at least this many days ago")
    .action((flags: DataDirFlags & { sink?: string; reason?: string; olderThanDays?: string }) => {
      const days = flags.olderThanDays === undefined ? undefined : Number(flags.olderThanDays);
      if (days !== undefined && !(Number.isFinite(days) && days >= 0)) {
        process.stderr.write(
          `sef: --older-than-days must be a number of days (0 or more), not ${JSON.stringify(flags.olderThanDays)}\n`,
        );
        process.exitCode = exitCodes.usage;
        return;
      }
      process.exitCode = withAgentStopped(flags.dataDir, "purge", (outbox) => {
        const purged = outbox.purgeDeadLetters({
          ...(flags.sink ? { sink: flags.sink } : {}),
          ...(flags.reason ? { reasonContains: flags.reason } : {}),
          ...(days !== undefined ? { deadLetteredUpToMs: Date.now() - days * 86_400_000 } : {}),
        });
        process.stdout.write(
          JSON.stringify({
            purged: sum(purged),
            bySink: Object.fromEntries(purged),
            outboxBytes: outbox.bytesInOutbox,
          }) + "\n",
        );
      });
    });
}

/** `sef outbox status`: per sink, as a table or one JSON object. */
function printOutboxStatus(outbox: Outbox, flags: DataDirFlags): void {
  const nowMs = Date.now();
  const sinks = outbox.status().map((s) => ({
    sink: s.sink,
    pending: s.pending,
    oldestPendingAgeSeconds:
      s.oldestPendingCreatedMs === null ? null : Math.max(0, Math.round((nowMs - s.oldestPendingCreatedMs) / 1000)),
    deadLettered: s.deadLettered,
    delivered: s.delivered,
    lastDelivery: s.lastDeliveryMs === null ? null : new Date(s.lastDeliveryMs).toISOString(),
  }));
  const parked = outbox.parkedSinks();
  if (flags.json) {
    process.stdout.write(
      JSON.stringify({ dataDir: flags.dataDir, outboxBytes: outbox.bytesInOutbox, sinks, parked }) + "\n",
    );
    return;
  }
  process.stdout.write(`outbox: ${outbox.bytesInOutbox} bytes of JSON held (${flags.dataDir})\n`);
  const header = ["SINK", "PENDING", "OLDEST_AGE_S", "DEAD_LETTERED", "DELIVERED", "LAST_DELIVERY"];
  const rows = sinks.map((s) => [
    s.sink,
    String(s.pending),
    s.oldestPendingAgeSeconds === null ? "-" : String(s.oldestPendingAgeSeconds),
    String(s.deadLettered),
    String(s.delivered),
    s.lastDelivery ?? "-",
  ]);
  process.stdout.write(table([header, ...rows]));
  if (parked.length === 0) return;
  process.stdout.write("parked (no longer configured; resume when a sink of that name returns):\n");
  process.stdout.write(
    table([
      ["SINK", "PENDING", "DEAD_LETTERED"],
      ...parked.map((p) => [p.sink, String(p.pending), String(p.deadLettered)]),
    ]),
  );
  process.stdout.write(
    `give a parked sink up (with the agent stopped):\n${parked.map((p) => `  ${sefCommandHint(["outbox", "drop-sink", p.sink], flags.dataDir)}\n`).join("")}`,
  );
}

/**
 * `sef outbox drop-sink NAME`: the sink's pending records to its dead-letter file with the reason (durable first), then
 * its rows out of the ledger. Exit 2 when the ledger knows no such sink, 78 when the dead-letter file cannot be written.
 */
function dropSink(outbox: Outbox, name: string, dataDir: string): number {
  const wasParked = outbox.parkedSinks().some((p) => p.sink === name);
  const reason = `given up by the operator (sef outbox drop-sink ${name}): the sink ${wasParked ? "was no longer configured" : "was dropped"} before it took the record`;
  const deadLetters = new DeadLetterFile(join(dataDir, "dead-letter"));
  let dropped: ReturnType<Outbox["dropSink"]>;
  let writeFailure: Error | undefined;
  const writeDeadLetters = (items: Parameters<DeadLetterFile["writeSync"]>[0]): void => {
    try {
      deadLetters.writeSync(items, Date.now());
    } catch (err) {
      writeFailure = err as Error;
      throw err;
    }
  };
  try {
    dropped = outbox.dropSink(name, reason, writeDeadLetters);
  } catch (err) {
    if (writeFailure === undefined) throw err;
    process.stderr.write(
      `sef: nothing dropped: the dead-letter file ${deadLetters.pathFor(name)} cannot be written: ${writeFailure.message}\n`,
    );
    return exitCodes.store;
  }
  if (dropped === undefined) {
    const known = [...outbox.status().map((s) => s.sink), ...outbox.parkedSinks().map((p) => p.sink)];
    process.stderr.write(
      `sef: the ledger holds no sink named ${JSON.stringify(name)} (it holds: ${known.join(", ") || "none"})\n`,
    );
    return exitCodes.usage;
  }
  process.stdout.write(
    JSON.stringify({
      sink: name,
      parked: wasParked,
      deadLettered: dropped.pending,
      forgottenDeadLettered: dropped.deadLettered,
      deadLetterFile: deadLetters.pathFor(name),
      outboxBytes: outbox.bytesInOutbox,
    }) + "\n",
  );
  return exitCodes.ok;
}

/**
 * Runs a writing command with the agent's own data-directory lock held: an agent cannot start meanwhile, and a running
 * one makes us refuse (exit 75) rather than write beside it.
 */
function withAgentStopped(dataDir: string, verb: string, body: (outbox: Outbox) => number | void): number {
  if (!storeExists(dataDir)) return exitCodes.store;
  let lock: DataDirLock;
  try {
    lock = acquireDataDir(dataDir);
  } catch (err) {
    if (!(err instanceof DataDirLockedError)) throw err;
    process.stderr.write(
      `sef: refusing to ${verb} while an agent holds ${dataDir}: ${err.message}. Stop the agent, ${verb}, start it again.\n`,
    );
    return exitCodes.refused;
  }
  try {
    return withStore(() => Store.open({ dataDir, checkpointInWorker: false }), body);
  } finally {
    lock.release();
  }
}

function sum(bySink: ReadonlyMap<string, number>): number {
  return [...bySink.values()].reduce((a, b) => a + b, 0);
}

function withReadOnlyStore(dataDir: string, body: (outbox: Outbox) => void): number {
  if (!storeExists(dataDir)) return exitCodes.store;
  return withStore(() => Store.openReadOnly(dataDir), body);
}

/** Whether `dataDir` holds a store; when not, says so (naming the file) and creates nothing. */
function storeExists(dataDir: string): boolean {
  const file = join(dataDir, "sef.db");
  if (existsSync(file)) return true;
  process.stderr.write(
    `sef: no store at ${file} (is ${dataDir} the agent's data directory? name it with --data-dir or SEF_DATA_DIR)\n`,
  );
  return false;
}

/** Opens the store and its outbox, runs `body` and closes it; a store that cannot be opened is reported (exit 78). */
function withStore(open: () => Store, body: (outbox: Outbox) => number | void): number {
  let store: Store;
  let outbox: Outbox;
  try {
    store = open();
  } catch (err) {
    return storeFailure(err);
  }
  try {
    outbox = Outbox.open(store);
  } catch (err) {
    store.close();
    return storeFailure(err);
  }
  try {
    return body(outbox) ?? exitCodes.ok;
  } finally {
    store.close();
  }
}

function storeFailure(err: unknown): number {
  if (!(err instanceof StoreError)) throw err;
  process.stderr.write(`sef: ${err.message}\n`);
  return exitCodes.store;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows
    .map(
      (r) =>
        r
          .map((cell, c) => cell.padEnd(widths[c]!))
          .join("  ")
          .trimEnd() + "\n",
    )
    .join("");
}
