// `sef-testbed emulate eventhubs` and `sef tail eventhubs` as processes: ready line, records tailed, SIGTERM → exit 0.
import { describe, expect, it } from "vitest";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { entries, interleavedTransitions, sinkFor } from "./fixtures.js";

function sef(args: string[], env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ["--import", "tsx", "src/agent/cli/main.ts", ...args], {
    env: { ...process.env, ...env },
  });
}

function testbed(args: string[]): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ["--import", "tsx", "src/testbed/cli.ts", ...args], { env: process.env });
}

function firstLine(child: ChildProcessWithoutNullStreams): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf("\n");
      if (nl !== -1) resolve(out.slice(0, nl));
    });
    child.once("exit", (code) => reject(new Error(`exited ${code} before a line`)));
  });
}

describe("sef-testbed emulate eventhubs / sef tail eventhubs", () => {
  it("prints the ready line, tails what the sink sends, and exits 0 on SIGTERM", async () => {
    const peer = testbed(["emulate", "eventhubs", "--port", "0", "--hub", "cli-hub", "--partitions", "2"]);
    let stderr = "";
    peer.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const line = await firstLine(peer);
    const match = /^sef-testbed emulate eventhubs listening on amqp:\/\/127\.0\.0\.1:(\d+)$/.exec(line);
    expect(match, line).not.toBeNull();
    const port = match![1];
    const connectionString = `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;EntityPath=cli-hub;UseDevelopmentEmulator=true`;
    await expect.poll(() => stderr).toContain("connection string:");

    const records = interleavedTransitions(2);
    const sink = sinkFor(connectionString);
    expect((await sink.send(entries(records), new AbortController().signal)).every((o) => o.kind === "delivered")).toBe(
      true,
    );
    await sink.close();

    const tail = sef(
      [
        "tail",
        "eventhubs",
        "--connection-string-env",
        "SEF_TEST_CS",
        "--from-start",
        "--max",
        String(records.length),
        "--timeout-ms",
        "20000",
      ],
      {
        SEF_TEST_CS: connectionString,
      },
    );
    let tailed = "";
    tail.stdout.on("data", (d: Buffer) => (tailed += d.toString()));
    const [tailCode] = await once(tail, "exit");
    expect(tailCode).toBe(0);
    const printed = tailed
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { RecordId: string });
    expect(printed.map((r) => r.RecordId).sort()).toEqual(records.map((r) => r.RecordId).sort());

    peer.kill("SIGTERM");
    const [code] = await once(peer, "exit");
    expect(code).toBe(0);
  });
});
