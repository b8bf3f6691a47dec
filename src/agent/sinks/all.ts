// Every sink, one line each: its folder's factory, exported under its type (the `--sink` prefix and config section).
export { sinkFactory as eventhubs } from "./eventhubs/factory.js";
export { sinkFactory as jsonl } from "./jsonl/factory.js";
export { sinkFactory as loganalytics } from "./loganalytics/factory.js";
export { sinkFactory as stdout } from "./stdout/factory.js";
export { sinkFactory as webhook } from "./webhook/factory.js";
