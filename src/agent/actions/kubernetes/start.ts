// Builds the kubernetes action from its config section and the environment the chart sets (NODE_NAME, POD_NAME,
// POD_NAMESPACE): loads the Kubernetes client, registers the metrics. Imported dynamically, only when configured.
import { InternalError } from "@sef/errors/sef-error.js";
import type { ActionContext } from "../action.js";
import { createKubeApi } from "./client.js";
import { KubernetesMetrics } from "./metrics.js";
import { NodeActions } from "./node-action.js";
import type { KubernetesSettings } from "./settings.js";

/** The node name (config, else NODE_NAME) and sef's own pod (POD_NAMESPACE/POD_NAME, when both are set). */
export function nodeIdentity(
  settings: KubernetesSettings,
  env: NodeJS.ProcessEnv,
): { nodeName: string | undefined; self: { namespace: string; name: string } | undefined } {
  const nodeName = settings.nodeName ?? (env.NODE_NAME?.trim() || undefined);
  const name = env.POD_NAME?.trim();
  const namespace = env.POD_NAMESPACE?.trim();
  return { nodeName, self: name && namespace ? { namespace, name } : undefined };
}

/** The node action worker; the Kubernetes client itself is loaded by the worker once it starts (see NodeActions). */
export function createNodeActions(settings: KubernetesSettings, context: ActionContext): NodeActions {
  const { nodeName, self } = nodeIdentity(settings, context.env);
  if (nodeName === undefined)
    throw new InternalError("kubernetes: no node name (the config rules require kubernetes.nodeName or NODE_NAME)");
  const loadApi = () =>
    createKubeApi({
      ...(settings.kubeconfig !== undefined ? { kubeconfig: settings.kubeconfig } : {}),
      inClusterPathPrefix: settings.inClusterPathPrefix,
      requestTimeoutMs: settings.requestTimeoutMs,
      userAgent: `sef/${context.agentVersion}`,
    });
  context.logger.info(
    {
      node: nodeName,
      self: self ? `${self.namespace}/${self.name}` : null,
      policy: settings.policy,
      credentials: settings.kubeconfig ?? "in-cluster",
    },
    "kubernetes action on",
  );
  return new NodeActions({
    settings,
    nodeName,
    self,
    loadApi,
    ledger: context.ledger,
    append: context.append,
    release: context.release,
    vm: context.vm,
    hasPolled: context.hasPolled,
    clock: context.clock,
    logger: context.logger.child({ action: "kubernetes" }),
    metrics: new KubernetesMetrics(context.metrics.registry),
    agentVersion: context.agentVersion,
  });
}
