// Test fixtures for the Log Analytics sink: full records of every type, outbox entries, a local-token
// credential (the fake clock is test/helpers/fake-clock.ts; drains go through the real drainer: test/helpers/ledger-drain.ts).
import type {
  ApprovalRecord,
  HeartbeatRecord,
  HookRecord,
  KubernetesRecord,
  MalformedEventRecord,
  SefRecord,
  TransitionRecord,
} from "../../src/contract/record.js";
import { transitionRecordId, deterministicUuid } from "../../src/contract/record-id.js";
import { mintLocalToken } from "../../src/testbed/peers/local-tokens.js";
import { transitionRecord as baseTransition } from "../helpers/records.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import type { TokenCredential } from "../../src/agent/sinks/loganalytics/sink.js";

const vm = {
  VmName: "vm-1",
  VmId: "6c5d0d4a-1111-2222-3333-444455556666",
  VmResourceId: "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-1",
  SubscriptionId: "sub",
  ResourceGroup: "rg",
  Location: "westeurope",
  VmScaleSetName: "",
  Zone: "1",
  Tags: { env: "prod", team: "web" } as Record<string, string>,
  AgentId: "00000000-0000-4000-8000-000000000001",
};

export function transitionRecord(n: number, overrides: Partial<TransitionRecord> = {}): TransitionRecord {
  return baseTransition({
    RecordId: transitionRecordId(vm.VmId, `EVT-${n}`, "Scheduled"),
    TimeGenerated: new Date(Date.now()).toISOString(),
    ObservedAt: new Date(Date.now()).toISOString(),
    EventId: `EVT-${n}`,
    Resources: ["vm-1", "vm-2"],
    NotBefore: "2024-05-01T12:00:00.000Z",
    Description: "Host maintenance",
    DocumentIncarnation: n,
    ...vm,
    ...overrides,
  });
}

/** One fully populated record of every record type. */
export function oneRecordOfEachType(): SefRecord[] {
  const heartbeat: HeartbeatRecord = {
    RecordId: deterministicUuid("Heartbeat", vm.VmId, "1"),
    RecordType: "Heartbeat",
    TimeGenerated: "2024-05-01T12:00:00.000Z",
    ObservedAt: "2024-05-01T12:00:00.000Z",
    AgentVersion: "0.1.0",
    Detail: JSON.stringify({ polls: 10 }),
    ...vm,
  };
  const approval: ApprovalRecord = {
    RecordId: deterministicUuid("Approval", vm.VmId, "EVT-1"),
    RecordType: "Approval",
    TimeGenerated: "2024-05-01T12:00:00.000Z",
    ObservedAt: "2024-05-01T12:00:00.000Z",
    EventId: "EVT-1",
    EventType: "Reboot",
    EventStatus: "Scheduled",
    DocumentIncarnation: 3,
    Outcome: "Approved",
    HttpStatus: 200,
    Detail: "",
    AgentVersion: "0.1.0",
    ...vm,
  };
  const hook: HookRecord = {
    RecordId: deterministicUuid("Hook", vm.VmId, "EVT-1"),
    RecordType: "Hook",
    TimeGenerated: "2024-05-01T12:00:00.000Z",
    ObservedAt: "2024-05-01T12:00:00.000Z",
    EventId: "EVT-1",
    EventType: "Reboot",
    EventStatus: "Scheduled",
    Outcome: "Succeeded",
    ExitCode: 0,
    ElapsedMs: 1234,
    Detail: "drain.sh",
    AgentVersion: "0.1.0",
    ...vm,
  };
  const kubernetes: KubernetesRecord = {
    RecordId: deterministicUuid("Kubernetes", vm.VmId, "EVT-1"),
    RecordType: "Kubernetes",
    TimeGenerated: "2024-05-01T12:00:00.000Z",
    ObservedAt: "2024-05-01T12:00:00.000Z",
    EventId: "EVT-1",
    EventType: "Reboot",
    EventStatus: "Scheduled",
    Outcome: "Drained",
    HttpStatus: 0,
    ElapsedMs: 42_000,
    Detail: JSON.stringify({
      node: "aks-nodepool1-0",
      policy: "drain-then-approve",
      podsEvicted: 18,
      podsBlockedByPdb: ["apps/db-0"],
      pdbHeldSeconds: 30,
    }),
    AgentVersion: "0.1.0",
    ...vm,
  };
  const rawEvent = {
    EventId: "EVT-BAD",
    EventType: "Reboot",
    EventStatus: "Scheduled",
    Resources: "vm-1",
    NotBefore: "",
  };
  const malformed: MalformedEventRecord = {
    RecordId: deterministicUuid("MalformedEvent", vm.VmId, "EVT-BAD"),
    RecordType: "MalformedEvent",
    TimeGenerated: "2024-05-01T12:00:00.000Z",
    ObservedAt: "2024-05-01T12:00:00.000Z",
    EventId: "EVT-BAD",
    EventStatus: "Scheduled",
    EventType: "Reboot",
    ResourceType: "",
    Resources: [],
    Description: "",
    EventSource: "",
    DocumentIncarnation: 4,
    AffectsThisVm: false,
    Outcome: "resources",
    Detail: JSON.stringify({ problem: 'Events[0]: Resources is not an array of strings: "vm-1"', event: rawEvent }),
    AgentVersion: "0.1.0",
    ...vm,
  };
  return [
    transitionRecord(1, { NotBefore: null }),
    transitionRecord(2),
    malformed,
    heartbeat,
    approval,
    hook,
    kubernetes,
  ];
}

export function entries(records: readonly SefRecord[], firstSeq = 1): OutboxEntry[] {
  return records.map((record, i) => ({ seq: firstSeq + i, record, json: JSON.stringify(record) }));
}

/** A credential handing out local tokens (what `sef-testbed simulate` serves), for `audience` or the scope's resource. */
export function localTokenCredential(audience?: string): TokenCredential & { calls: number } {
  const credential = {
    calls: 0,
    getToken: async (scopes: string | string[]) => {
      credential.calls += 1;
      const scope = Array.isArray(scopes) ? scopes[0]! : scopes;
      const { token, claims } = mintLocalToken(audience ?? scope.replace(/\/\.default$/, ""));
      return { token, expiresOnTimestamp: claims.exp * 1000, tokenType: "Bearer" as const };
    },
  };
  return credential;
}
