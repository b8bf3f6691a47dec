// `sef-testbed emulate kubernetes` as a child process of the built CLI: seeded from a JSON file (objects, Leases, fault
// rules), it prints the URL and the kubeconfig path, kubectl works with that kubeconfig and the given token, the
// /__peer/ control surface installs faults and reports stats, a bad seed file fails at start, and SIGTERM ends it
// with exit code 0.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectlPath } from "../helpers/kubectl-layer.js";
import { runProcess } from "../helpers/run-process.js";
import { kubectl, removeKubectlHome } from "./kubectl.js";
import { requestPeer } from "./peer-client.js";

/** The CA a kubeconfig carries inline. */
function caOf(kubeconfigPath: string): string {
  const data = /certificate-authority-data: (\S+)/.exec(readFileSync(kubeconfigPath, "utf8"))?.[1] ?? "";
  return Buffer.from(data, "base64").toString("utf8");
}

const repo = join(import.meta.dirname, "..", "..");
const cliJs = join(repo, "src", "testbed", "dist", "cli.js");
let scratch = "";

beforeAll(() => {
  if (!existsSync(cliJs)) throw new Error("the build did not produce src/testbed/dist/cli.js: run npm run build first");
  expect(kubectlPath()).toMatch(/kubectl$/);
  scratch = mkdtempSync(join(tmpdir(), "sef-emulate-kubernetes-"));
});
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  removeKubectlHome();
});

describe("sef-testbed emulate kubernetes", () => {
  it("serves the seeded cluster to kubectl through the kubeconfig it writes, and stops on SIGTERM", async () => {
    const seedFile = join(scratch, "seed.json");
    const kubeconfigPath = join(scratch, "kubeconfig");
    const seed = {
      nodes: [{ name: "aks-pool-0", unschedulable: true }],
      pods: [
        {
          namespace: "apps",
          name: "web-1",
          nodeName: "aks-pool-0",
          labels: { app: "web" },
          ownerReferences: [{ kind: "ReplicaSet", name: "web-5d" }],
        },
      ],
      podDisruptionBudgets: [
        { namespace: "apps", name: "web", matchLabels: { app: "web" }, minAvailable: 0, blockForMs: "forever" },
      ],
      leases: [{ namespace: "kube-node-lease", name: "aks-pool-0", holderIdentity: "aks-pool-0" }],
      faults: [
        {
          match: { verbs: ["create"], resources: ["pods/eviction"] },
          answer: { kind: "throttle", retryAfterSeconds: 1 },
          count: 1,
        },
      ],
    };
    writeFileSync(seedFile, JSON.stringify(seed));
    const child = spawn(
      process.execPath,
      [
        cliJs,
        "emulate",
        "kubernetes",
        "--seed",
        seedFile,
        "--kubeconfig-out",
        kubeconfigPath,
        "--token",
        "cli-test-token",
        "--log-level",
        "warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      const lines = createInterface({ input: child.stdout });
      const printed: string[] = [];
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no kubeconfig line within 20 s: ${printed.join("\n")}`)),
          20_000,
        );
        lines.on("line", (line) => {
          printed.push(line);
          if (line.startsWith("kubeconfig: ")) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      expect(printed[0]).toMatch(/^sef-testbed emulate kubernetes listening on https:\/\/127\.0\.0\.1:\d+$/);
      expect(printed[1]).toBe(`kubeconfig: ${kubeconfigPath}`);
      expect(readFileSync(kubeconfigPath, "utf8")).toContain("token: cli-test-token");
      const nodes = await kubectl(kubeconfigPath, ["get", "nodes", "--no-headers"]);
      expect(nodes.stdout).toMatch(/^aks-pool-0\s+Ready,SchedulingDisabled\s/);
      const pods = await kubectl(kubeconfigPath, ["get", "pods", "-n", "apps", "-o", "name"]);
      expect(pods.stdout).toBe("pod/web-1\n");
      const budgets = await kubectl(kubeconfigPath, ["get", "pdb", "-n", "apps", "--no-headers"]);
      expect(budgets.stdout).toMatch(/^web\s+0\s+N\/A\s+0\s/);
      expect((await kubectl(kubeconfigPath, ["get", "leases", "-A", "-o", "name"])).stdout).toBe(
        "lease.coordination.k8s.io/aks-pool-0\n",
      );
      // The control surface: the seeded fault is listed, a new one is installed, the stats count requests.
      const endpoint = {
        url: (printed[0] ?? "").replace(/^.* on /, ""),
        caPem: caOf(kubeconfigPath),
        token: "cli-test-token",
      };
      expect(JSON.parse((await requestPeer(endpoint, "GET", "/__peer/faults")).text)).toMatchObject([
        { id: "fault-1", answer: { kind: "throttle" }, hits: 0 },
      ]);
      expect(
        (
          await requestPeer(endpoint, "POST", "/__peer/faults", {
            body: { match: { resources: ["leases"] }, answer: { kind: "internal-error" } },
          })
        ).body,
      ).toEqual({ id: "fault-2" });
      expect((await kubectl(kubeconfigPath, ["get", "leases", "-A"])).stderr).toContain(
        "Internal error occurred: etcdserver: leader changed",
      );
      expect((await requestPeer(endpoint, "GET", "/__peer/stats")).body).toMatchObject({
        requests: { byCode: { "500": 1 }, faulted: 1 },
      });
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exit).toBe(0);
  });

  it("fails at start on a seed file that is not one JSON object", async () => {
    const seedFile = join(scratch, "bad-seed.json");
    writeFileSync(seedFile, "[]");
    const result = await runProcess(process.execPath, [cliJs, "emulate", "kubernetes", "--seed", seedFile], 20_000);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toContain("a seed file holds one JSON object");
    writeFileSync(seedFile, JSON.stringify({ faults: [{ answer: { kind: "slow" } }] }));
    const badFault = await runProcess(process.execPath, [cliJs, "emulate", "kubernetes", "--seed", seedFile], 20_000);
    expect(badFault.code).not.toBe(0);
    expect(badFault.stderr).toContain("fault answer.kind must be one of throttle, forbidden, internal-error, status");
  });
});
