// prom-client's classes without its index: the index also loads the Pushgateway (node:https with TLS, zlib) and the
// cluster aggregator (node:cluster), which no sef command uses (about 4.5 MB resident in an idle agent). Same modules
// the index re-exports, so the types are prom-client's own.
import type * as PromClient from "prom-client";
import registry from "prom-client/lib/registry.js";
import counter from "prom-client/lib/counter.js";
import gauge from "prom-client/lib/gauge.js";
import histogram from "prom-client/lib/histogram.js";
import defaultMetrics from "prom-client/lib/defaultMetrics.js";

export const Registry = registry as typeof PromClient.Registry;
export type Registry = PromClient.Registry;
export const Counter = counter as typeof PromClient.Counter;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export const Gauge = gauge as typeof PromClient.Gauge;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export const Histogram = histogram as typeof PromClient.Histogram;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;
export const collectDefaultMetrics = defaultMetrics as typeof PromClient.collectDefaultMetrics;
