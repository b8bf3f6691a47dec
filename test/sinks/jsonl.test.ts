// The jsonl file only ever holds complete JSON lines: after kill -9 in the middle of a large write (the built agent
// repairs the file when it opens it) and after ENOSPC mid-append (a tiny tmpfs: the failed append is cut away).
import { describe, expect, it } from "vitest";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonlSink } from "../../src/agent/sinks/jsonl/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import type { SefRecord } from "../../src/contract/record.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { runCli, waitUntil } from "../helpers/agent-process.js";

function linesOf(path: string): unknown[] {
  const text = readFileSync(path, "utf8");
  if (text !== "") expect(text.endsWith("\n"), "file ends with a newline").toBe(true);
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as unknown);
}

function entries(count: number, padBytes: number, firstSeq = 1): OutboxEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const record = {
      RecordId: `r-${firstSeq + i}`,
      RecordType: "Heartbeat",
      Pad: "x".repeat(padBytes),
    } as unknown as SefRecord;
    return { seq: firstSeq + i, record, json: JSON.stringify(record) };
  });
}

describe("jsonl sink: torn lines", () => {
  it("cuts a line torn by kill -9 mid-write back when the agent opens the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-jsonl-kill-"));
    const file = join(dir, "records.jsonl");
    writeFileSync(file, `${JSON.stringify({ RecordId: "before-1" })}\n${JSON.stringify({ RecordId: "before-2" })}\n`);
    // A writer appending one large record in 512 KiB pieces, killed while the record is half written: after 8 pieces it
    // blocks (so a fast disk cannot finish the line before the kill arrives).
    const writer = spawn(process.execPath, [
      "-e",
      `const fs=require("node:fs");const fd=fs.openSync(${JSON.stringify(file)},"a");fs.writeSync(fd,'{"RecordId":"torn","Pad":"');` +
        `const piece=Buffer.alloc(512*1024,120);for(let i=0;i<8;i++){fs.writeSync(fd,piece);}` +
        `Atomics.wait(new Int32Array(new SharedArrayBuffer(4)),0,0);fs.writeSync(fd,'"}\\n');`,
    ]);
    await waitUntil(() => statSync(file).size > 2 * 1024 * 1024, 10_000, "the large write to start");
    writer.kill("SIGKILL");
    await new Promise((r) => writer.once("exit", r));
    expect(readFileSync(file, "utf8").endsWith("\n")).toBe(false);

    const sim = await startSimulator({ scenario: "idle" });
    const agent = runCli([
      "run",
      "--imds-url",
      sim.url,
      "--poll-interval-ms",
      "200",
      "--data-dir",
      join(dir, "data"),
      "--sink",
      `jsonl:${file}`,
      "--heartbeat-interval-ms",
      "3600000",
      "--metrics-port",
      "0",
    ]);
    try {
      await waitUntil(
        () => readFileSync(file, "utf8").includes('"RecordType":"Heartbeat"'),
        15_000,
        "the heartbeat in the file",
      );
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    const records = linesOf(file) as Array<{ RecordId: string; RecordType?: string }>;
    expect(records.map((r) => r.RecordId).slice(0, 2)).toEqual(["before-1", "before-2"]);
    // The start-up heartbeat and the goodbye heartbeat written on SIGTERM, each a whole line.
    expect(records.slice(2).map((r) => r.RecordType)).toEqual(["Heartbeat", "Heartbeat"]);
    expect(agent.stderr()).toContain("cut back to the last complete line");
  });

  it("truncates a failed append (ENOSPC) to the size before it, and appends whole lines once space is back", async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), "sef-jsonl-full-"));
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=128k", "tmpfs", mountPoint]);
    try {
      const file = join(mountPoint, "out", "records.jsonl");
      const sink = new JsonlSink(file);
      expect(new Set((await sink.send(entries(10, 1000, 1))).map((o) => o.kind))).toEqual(new Set(["delivered"]));
      const sizeBefore = statSync(file).size;
      mkdirSync(join(mountPoint, "filler"));
      const filler = join(mountPoint, "filler", "blob");
      writeFileSync(filler, Buffer.alloc(128 * 1024 - sizeBefore - 40 * 1024)); // about 20-40 KiB left

      const result = (await sink.send(entries(60, 1000, 11)))[0]!;
      expect(result.kind).toBe("retry");
      expect(result.kind === "retry" && result.reason).toMatch(/ENOSPC/);
      expect(statSync(file).size).toBe(sizeBefore);
      expect(linesOf(file)).toHaveLength(10);

      rmSync(filler);
      expect(new Set((await sink.send(entries(60, 1000, 11))).map((o) => o.kind))).toEqual(new Set(["delivered"]));
      await sink.close();
      expect((linesOf(file) as Array<{ RecordId: string }>).map((r) => r.RecordId)).toEqual(
        Array.from({ length: 70 }, (_, i) => `r-${i + 1}`),
      );
    } finally {
      execFileSync("umount", [mountPoint]);
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });
});
