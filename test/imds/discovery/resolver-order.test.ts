// The resolver's order and bookkeeping with the probe, the verification and the sources given as plain functions that
// record what they were asked (the real ones over loopback are in resolver.test.ts): port 80 left out of URLs and
// probed as 80, the api-version and timeouts each check gets, each address asked once whichever way it comes again,
// an explicit endpoint never reused as a remembered one, no source read once discovery is stopped.
import { describe, expect, it } from "vitest";
import {
  endpointUrl,
  rememberable,
  resolveImdsEndpoint,
  type ResolveRequest,
} from "../../../src/agent/imds/discovery/resolver.js";
import { imdsDiscoverySettingsSchema, type ImdsDiscoverySettings } from "../../../src/agent/imds/discovery/settings.js";
import type { Candidate, DiscoverySourceReader } from "../../../src/agent/imds/discovery/sources.js";
import type { DiscoverySource } from "../../../src/agent/imds/discovery/failure.js";

const settings = (over: Record<string, unknown> = {}): ImdsDiscoverySettings =>
  imdsDiscoverySettingsSchema.parse({
    linkLocalAddress: "127.0.0.3",
    port: 80,
    probeTimeoutMs: 300,
    verifyTimeoutMs: 700,
    rememberAddresses: ["127.0.0.2"],
    ...over,
  });

/** A probe and a verification answering at the given hosts only, each call recorded. */
function peers(answering: { probe: string[]; verify: string[] }) {
  const probed: string[] = [];
  const verified: string[] = [];
  const request = (s: ImdsDiscoverySettings, over: Partial<ResolveRequest> = {}): ResolveRequest => ({
    settings: s,
    probe: async (host, port, timeoutMs) => {
      probed.push(`${host}:${port}/${timeoutMs}`);
      return { answered: answering.probe.includes(host), detail: answering.probe.includes(host) ? "up" : "refused" };
    },
    verify: async (url, apiVersion, timeoutMs) => {
      verified.push(`${url} ${apiVersion}/${timeoutMs}`);
      const ok = answering.verify.includes(new URL(url).hostname);
      return { answered: ok, detail: ok ? "a document" : "no document" };
    },
    context: { env: {}, platform: "linux", nowMs: 0 },
    sources: [],
    ...over,
  });
  return { probed, verified, request };
}

/** A source giving `addresses` as its candidates, counting its reads. */
function source(name: DiscoverySource, addresses: string[], onRead: () => void = () => undefined) {
  const reads = { count: 0 };
  const reader: DiscoverySourceReader = {
    source: name,
    read: async () => {
      reads.count++;
      onRead();
      const candidates: Candidate[] = addresses.map((address) => ({ source: name, address }));
      return { candidates, failures: [] };
    },
  };
  return { reader, reads };
}

describe("endpointUrl and rememberable", () => {
  it("leaves port 80 out of the URL and writes any other port", () => {
    expect(endpointUrl("169.254.169.254", 80)).toBe("http://169.254.169.254");
    expect(endpointUrl("169.254.169.254", 8080)).toBe("http://169.254.169.254:8080");
  });

  it("remembers a URL only at a listed address, and never a malformed one", () => {
    const s = settings();
    expect(rememberable("http://127.0.0.2:8080", s)).toBe(true);
    expect(rememberable("http://127.0.0.5", s)).toBe(false);
    expect(rememberable("not a url", s)).toBe(false);
  });
});

describe("resolveImdsEndpoint's order", () => {
  it("probes a URL without a port at port 80, with the probe timeout, and returns the URL as written", async () => {
    const { probed, request } = peers({ probe: ["127.0.0.3"], verify: [] });
    const outcome = await resolveImdsEndpoint(request(settings()));
    expect(outcome).toEqual({
      endpoint: { url: "http://127.0.0.3", source: "link-local", reused: false },
      failures: [],
    });
    expect(probed).toEqual(["127.0.0.3:80/300"]);
  });

  it("verifies a candidate with the default api-version 2020-07-01, or the one asked for, within the verify timeout", async () => {
    const first = peers({ probe: ["127.0.0.2"], verify: ["127.0.0.2"] });
    const remembered = { url: "http://127.0.0.2", source: "dhclient" as const };
    expect((await resolveImdsEndpoint(first.request(settings(), { remembered }))).endpoint).toEqual({
      url: "http://127.0.0.2",
      source: "dhclient",
      reused: true,
    });
    expect(first.probed).toEqual(["127.0.0.3:80/300", "127.0.0.2:80/300"]);
    expect(first.verified).toEqual(["http://127.0.0.2 2020-07-01/700"]);
    const second = peers({ probe: ["127.0.0.2"], verify: ["127.0.0.2"] });
    await resolveImdsEndpoint(second.request(settings(), { remembered, apiVersion: "2019-08-01" }));
    expect(second.verified).toEqual(["http://127.0.0.2 2019-08-01/700"]);
  });

  it("asks each address once: the link-local one again as remembered or as a candidate, a candidate given twice", async () => {
    const { probed, verified, request } = peers({ probe: ["127.0.0.5"], verify: [] });
    const env = source("env", ["127.0.0.3", "127.0.0.5"]);
    const waagent = source("waagent", ["127.0.0.5", "127.0.0.3"]);
    const outcome = await resolveImdsEndpoint(
      request(settings(), {
        remembered: { url: "http://127.0.0.3", source: "dhclient" },
        sources: [env.reader, waagent.reader],
      }),
    );
    expect(outcome.endpoint).toBeUndefined();
    expect(outcome.failures.map((f) => `${f.source}:${f.reason}:${f.detail}`)).toEqual([
      "link-local:not-answering:127.0.0.3: refused",
      "env:not-imds:127.0.0.5: no document",
    ]);
    expect(probed).toEqual(["127.0.0.3:80/300", "127.0.0.5:80/300"]);
    expect(verified).toEqual(["http://127.0.0.5 2020-07-01/700"]);
    expect([env.reads.count, waagent.reads.count]).toEqual([1, 1]);
  });

  it("never takes an explicit URL remembered from before as the endpoint: the sources are asked", async () => {
    const { probed, request } = peers({ probe: ["127.0.0.2"], verify: ["127.0.0.2"] });
    const networkd = source("networkd", ["127.0.0.2"]);
    const outcome = await resolveImdsEndpoint(
      request(settings(), { remembered: { url: "http://127.0.0.2", source: "explicit" }, sources: [networkd.reader] }),
    );
    expect(outcome).toEqual({
      endpoint: { url: "http://127.0.0.2", source: "networkd", reused: false },
      failures: [{ source: "link-local", reason: "not-answering", detail: "127.0.0.3: refused", file: undefined }],
    });
    expect(probed).toEqual(["127.0.0.3:80/300", "127.0.0.2:80/300"]);
  });

  it("reads no further source once the caller's signal aborted, and tells each failure as it happens", async () => {
    const stop = new AbortController();
    const { request } = peers({ probe: [], verify: [] });
    const env = source("env", ["127.0.0.5"], () => stop.abort());
    const waagent = source("waagent", ["127.0.0.6"]);
    const told: string[] = [];
    const outcome = await resolveImdsEndpoint(
      request(settings(), {
        sources: [env.reader, waagent.reader],
        context: { env: {}, platform: "linux", nowMs: 0, signal: stop.signal },
        onFailure: (f) => told.push(`${f.source}:${f.reason}`),
      }),
    );
    expect(outcome.failures.map((f) => `${f.source}:${f.reason}`)).toEqual([
      "link-local:not-answering",
      "env:not-answering",
    ]);
    expect(told).toEqual(["link-local:not-answering", "env:not-answering"]);
    expect(waagent.reads.count).toBe(0);
  });
});
