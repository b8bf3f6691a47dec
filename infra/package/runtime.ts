// The pinned Node.js runtimes, fetched from the npm registry (`npm pack`) into a gitignored cache and checked against
// the registry's dist.integrity recorded here, so building an artifact needs nothing but the registries.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

export const nodeRuntimeVersion = "24.21.0";

export type RuntimePlatform = "linux-x64" | "linux-arm64" | "win-x64";

/** dist.integrity of each package at {@link nodeRuntimeVersion}, as the registry reported it (`npm view NAME@VER dist.integrity`). */
export const runtimeIntegrity: Readonly<Record<RuntimePlatform, string>> = {
  "linux-x64": "sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==",
  "linux-arm64": "sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==",
  "win-x64": "sha512-0ddSuAi9KnmYzfjJwKfFUO5YfljMVfa9smiGRQXmp5QGhm8KXk7xbqkFNeaPXVaL6sfZ5oGfCD7q8wWY/TnypA==",
};

export interface Runtime {
  readonly platform: RuntimePlatform;
  /** Unpacked package directory: `bin/node` (or `bin/node.exe`) and `LICENSE`. */
  readonly dir: string;
  readonly binary: string;
  readonly license: string;
}

export function runtimePackageName(platform: RuntimePlatform): string {
  return `node-${platform}`;
}

/** The SRI string (`sha512-…`) of a file's bytes. */
export function integrityOf(file: string): string {
  return "sha512-" + createHash("sha512").update(readFileSync(file)).digest("base64");
}

/**
 * Unpacks `name@version` from the registry into `cacheDir/name-version/`, fetching the tarball with `npm pack` when the
 * cache lacks it, and refusing it unless its bytes match `integrity` (the registry's dist.integrity, pinned here).
 */
export function fetchRegistryPackage(name: string, version: string, integrity: string, cacheDir: string): string {
  const tarball = join(cacheDir, `${name}-${version}.tgz`);
  const dir = join(cacheDir, `${name}-${version}`);
  mkdirSync(cacheDir, { recursive: true });
  if (!existsSync(tarball) || integrityOf(tarball) !== integrity) {
    rmSync(tarball, { force: true });
    rmSync(dir, { recursive: true, force: true });
    execFileSync("npm", ["pack", `${name}@${version}`, "--pack-destination", cacheDir, "--silent"], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    const actual = integrityOf(tarball);
    if (actual !== integrity) {
      rmSync(tarball, { force: true });
      throw new Error(`${name}@${version}: integrity ${actual} does not match the pinned ${integrity}`);
    }
  }
  if (!existsSync(dir)) {
    const staging = `${dir}.partial`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    execFileSync("tar", ["-xzf", tarball, "-C", staging, "--strip-components=1", "--no-same-owner"]);
    renameSync(staging, dir);
  }
  return dir;
}

/** Returns the unpacked runtime for `platform`, fetching and verifying it first when the cache lacks it. */
export function fetchRuntime(platform: RuntimePlatform, cacheDir: string): Runtime {
  const name = runtimePackageName(platform);
  const dir = fetchRegistryPackage(name, nodeRuntimeVersion, runtimeIntegrity[platform], cacheDir);
  const binary = join(dir, "bin", platform.startsWith("win") ? "node.exe" : "node");
  if (!existsSync(binary)) throw new Error(`${name}@${nodeRuntimeVersion} has no ${binary}`);
  return { platform, dir, binary, license: join(dir, "LICENSE") };
}
