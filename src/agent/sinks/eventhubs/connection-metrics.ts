// Prometheus metrics of the Event Hubs sink's connection: opens and closes (by reason) counters and a 0/1 open gauge,
// registered on the agent's registry (once per registry; labelled by sink name).
import { Counter, Gauge, type Registry } from "../../observability/prom-client.js";
import type { ConnectionObserver } from "./idle-producer.js";

const opensName = "sef_eventhubs_connection_opens_total";
const closesName = "sef_eventhubs_connection_closes_total";
const openName = "sef_eventhubs_connection_open";

function counter(registry: Registry, name: string, help: string, labelNames: string[]): Counter {
  return (
    (registry.getSingleMetric(name) as Counter | undefined) ??
    new Counter({ name, help, labelNames, registers: [registry] })
  );
}

/** An observer that counts the sink's connection opens/closes and keeps the open gauge in `registry`. */
export function connectionMetrics(registry: Registry, sink: string): ConnectionObserver {
  const opens = counter(registry, opensName, "Event Hubs AMQP connections opened, per sink", ["sink"]);
  const closes = counter(
    registry,
    closesName,
    "Event Hubs AMQP connections closed, per sink and reason (idle, shutdown)",
    ["sink", "reason"],
  );
  const open =
    (registry.getSingleMetric(openName) as Gauge | undefined) ??
    new Gauge({
      name: openName,
      help: "1 while the Event Hubs sink holds a connection, else 0",
      labelNames: ["sink"],
      registers: [registry],
    });
  open.set({ sink }, 0);
  let held = 0;
  return {
    opened: () => {
      opens.inc({ sink });
      held++;
      open.set({ sink }, held > 0 ? 1 : 0);
    },
    closed: (reason) => {
      closes.inc({ sink, reason });
      held = Math.max(0, held - 1);
      open.set({ sink }, held > 0 ? 1 : 0);
    },
  };
}
