// `sef discover`: one IMDS endpoint resolution with the agent's configuration, printing each source's failure and the
// endpoint found (exit 0), or that none was (exit 1) — for checking discovery on a VM without running the agent.
import type { Command } from "commander";
import { loadConfig, ConfigError } from "../../config/load.js";
import { resolveImdsEndpoint } from "../../imds/discovery/index.js";
import { tcpProbe } from "../../imds/discovery/probe.js";

export function registerDiscoverCommand(program: Command): void {
  program
    .command("discover")
    .description("find the IMDS endpoint as `sef run` would (without the remembered one) and say how")
    .option("-c, --config <file>", "JSON config file (also SEF_CONFIG)")
    .option("--imds-url <url>", "an explicit IMDS base URL (then nothing is discovered)")
    .action(async (opts: { config?: string; imdsUrl?: string }) => {
      let config;
      try {
        config = loadConfig({ file: opts.config, flags: { imdsUrl: opts.imdsUrl } }).config;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        process.stderr.write(`sef: ${err.message}\n`);
        process.exitCode = 2;
        return;
      }
      const outcome = await resolveImdsEndpoint({
        explicitUrl: config.imdsUrl,
        settings: config.imdsDiscovery,
        probe: tcpProbe,
        apiVersion: config.apiVersion,
        context: { env: process.env, platform: process.platform, nowMs: Date.now() },
        onFailure: (f) =>
          process.stdout.write(
            `${f.source.padEnd(15)} ${f.reason.padEnd(14)} ${f.file ? `${f.file}: ` : ""}${f.detail}\n`,
          ),
      });
      if (outcome.endpoint) {
        process.stdout.write(`endpoint ${outcome.endpoint.url} (source: ${outcome.endpoint.source})\n`);
      } else {
        process.stdout.write("no IMDS endpoint found\n");
        process.exitCode = 1;
      }
    });
}
