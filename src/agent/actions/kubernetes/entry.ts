// The kubernetes action's registry entry: section `kubernetes` (settings.ts; absent = off), rows of kind `kubernetes`.
// Light: the worker, and through it @kubernetes/client-node, are imported by `create` only when the section is there.
import * as z from "zod/mini";
import type { ActionEntry } from "../action.js";
import { kubernetesSettingsSchema, type KubernetesSettings } from "./settings.js";

export const actionEntry: ActionEntry<KubernetesSettings | undefined> = {
  section: "kubernetes",
  kind: "kubernetes",
  settingsSchema: z.optional(kubernetesSettingsSchema),
  settingsDescription:
    "The kubernetes action: taint, cordon and drain this VM's Kubernetes node before an event, approve, undo after (absent: off, the client is never loaded); see src/agent/actions/kubernetes/README.md.",
  isOn: (settings) => settings !== undefined,
  rules({ settings, env }) {
    if (settings === undefined) return [];
    const problems: string[] = [];
    if (settings.nodeName === undefined && !env.NODE_NAME?.trim()) {
      problems.push(
        "kubernetes.nodeName: required when the environment variable NODE_NAME is not set (the chart sets it from the downward API)",
      );
    }
    if (settings.pdbRetryMaxMs < settings.pdbRetryInitialMs)
      problems.push("kubernetes.pdbRetryMaxMs: must be at least pdbRetryInitialMs");
    return problems;
  },
  async create(settings, context) {
    if (settings === undefined) return undefined;
    const { createNodeActions } = await import("./start.js");
    return createNodeActions(settings, context);
  },
};
