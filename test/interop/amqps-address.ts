// Starts the local Event Hubs peer on the AMQPS port 5671 of a random loopback address (127.x.y.z): the Python
// clients of Debian bookworm (azure-eventhub 5.11, uamqp 1.5.3) always connect to port 5671 and know no emulator mode.
import { randomInt } from "node:crypto";
import {
  startEventHubsEmulator,
  type EventHubsEmulator,
  type EventHubsEmulatorOptions,
} from "../../src/testbed/peers/eventhubs/server.js";

export const amqpsPort = 5671;

export async function startPeerOnAmqpsPort(
  options: Omit<EventHubsEmulatorOptions, "host" | "port" | "tls">,
): Promise<EventHubsEmulator> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 20; attempt++) {
    const host = `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
    try {
      return await startEventHubsEmulator({ ...options, host, port: amqpsPort, tls: true });
    } catch (err) {
      lastError = err;
      if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
    }
  }
  throw lastError;
}
