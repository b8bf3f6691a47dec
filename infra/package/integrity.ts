// Release integrity beside the artifacts: a CycloneDX SBOM for each (`npm sbom` over the workspace it ships, with the
// Node.js runtime it carries added) as <artifact>.cdx.json, and SHA256SUMS (sha256sum's format) over them all.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { nodeRuntimeVersion } from "./runtime.js";

type CycloneDx = Record<string, unknown> & {
  components?: Record<string, unknown>[];
  metadata?: Record<string, unknown>;
};

/** `npm sbom` (CycloneDX) of one workspace's dependency tree, as the lock file and node_modules have it. */
export function workspaceSbom(repoRoot: string, workspace: "src/agent" | "src/fleet"): CycloneDx {
  const out = execFileSync("npm", ["sbom", "--sbom-format", "cyclonedx", "--workspace", workspace], {
    cwd: repoRoot,
    encoding: "utf8",
    maxBuffer: 64 << 20,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return JSON.parse(out) as CycloneDx;
}

/** A UUID made from bytes (name-based, like RFC 4122's version 5 but over SHA-256): the same SBOM, the same serial. */
function uuidOf(text: string): string {
  const h = createHash("sha256").update(text).digest("hex");
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface SbomSubject {
  /** The artifact the SBOM describes (written beside it as <artifact>.cdx.json). */
  readonly artifact: string;
  /** What it is: sef or sef-fleet, at its version. */
  readonly name: string;
  readonly version: string;
  readonly epochS: number;
}

/** Writes `<artifact>.cdx.json`: the workspace's SBOM about this artifact, the Node.js runtime listed. */
export function writeSbom(base: CycloneDx, subject: SbomSubject): string {
  const node = {
    "bom-ref": `node@${nodeRuntimeVersion}`,
    type: "application",
    name: "node",
    version: nodeRuntimeVersion,
    description: "the Node.js runtime the artifact carries",
    purl: `pkg:generic/node@${nodeRuntimeVersion}`,
  };
  const sbom: CycloneDx = {
    ...base,
    metadata: {
      ...base.metadata,
      timestamp: new Date(subject.epochS * 1000).toISOString(),
      component: {
        "bom-ref": `${subject.name}@${subject.version}`,
        type: "application",
        name: subject.name,
        version: subject.version,
        description: basename(subject.artifact),
      },
    },
    components: [...(base.components ?? []), node],
  };
  delete sbom.serialNumber;
  const body = JSON.stringify(sbom);
  const out = `${subject.artifact}.cdx.json`;
  writeFileSync(out, `${JSON.stringify({ ...sbom, serialNumber: `urn:uuid:${uuidOf(body)}` }, null, 2)}\n`);
  return out;
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/**
 * Adds `files` (all in one directory) to that directory's SHA256SUMS, replacing their earlier lines and keeping the
 * lines of other files still there; sorted by name. `sha256sum -c SHA256SUMS` checks them.
 */
export async function writeSha256Sums(files: readonly string[]): Promise<string | undefined> {
  if (files.length === 0) return undefined;
  const dir = dirname(files[0]!);
  const sums = join(dir, "SHA256SUMS");
  const lines = new Map<string, string>();
  if (existsSync(sums)) {
    for (const line of readFileSync(sums, "utf8").split("\n")) {
      const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
      if (m !== null && existsSync(join(dir, m[2]!))) lines.set(m[2]!, m[1]!);
    }
  }
  for (const file of files) lines.set(basename(file), await sha256Of(file));
  const names = [...lines.keys()].sort();
  writeFileSync(sums, names.map((name) => `${lines.get(name)}  ${name}\n`).join(""));
  return sums;
}
