// Services around the agent loop: heartbeats, metrics/health endpoints, hooks and approvals (wired in later).
import type { Logger } from "pino";
import type { Agent } from "./agent.js";
import type { AgentConfig } from "../config/schema.js";

export interface AgentServices {
  stop(): Promise<void>;
}

export async function startAgentServices(_agent: Agent, _config: AgentConfig, _logger: Logger): Promise<AgentServices> {
  return { stop: async () => undefined };
}
