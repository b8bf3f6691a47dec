// Option "nothing": Node with the launcher's flags and no client (the floor of the table).
import { report } from "./measure.js";

const started = performance.now();
await report(started, started, started);
