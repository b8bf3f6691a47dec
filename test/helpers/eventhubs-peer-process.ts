// The testbed's Event Hubs peer as a process of its own (`sef-testbed emulate eventhubs` on a free port), as the real
// service is another machine: what a bench whose peer carries heavy traffic starts, so the peer has an event loop and
// a core of its own.
import { spawn } from "node:child_process";
import { testbedCliPath } from "./agent-process.js";

export interface EventHubsPeerProcess {
  readonly connectionString: string;
  /** SIGTERM, then SIGKILL after 10 s: resolves once the process has exited. */
  close(): Promise<void>;
}

/** Starts the peer and resolves with the connection string it prints once listening (30 s at most). */
export async function startEventHubsPeerProcess(hub: string, partitions: number): Promise<EventHubsPeerProcess> {
  const args = ["emulate", "eventhubs", "--port", "0", "--hub", hub, "--partitions", `${partitions}`];
  const child = spawn(process.execPath, [testbedCliPath, ...args, "--log-level", "warn"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  const connectionString = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the Event Hubs peer did not start in 30 s: ${err}`)), 30_000);
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      const printed = /^connection string: (\S+)$/m.exec(err);
      if (printed) {
        clearTimeout(timer);
        resolve(printed[1]!);
      }
    });
    child.once("exit", (code) => reject(new Error(`the Event Hubs peer exited ${code}: ${err}`)));
  });
  return {
    connectionString,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
