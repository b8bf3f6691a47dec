// The fleet service's version (`sef-fleet --version`): a build-time constant in the packaged bundle (esbuild `define`),
// else its package.json — beside this module in the sources, one level up from dist/.
import { readFileSync } from "node:fs";

/** Replaced by the package version when `npm run package` bundles the fleet service; undeclared otherwise. */
declare const SEF_BUNDLED_FLEET_VERSION: string | undefined;

function readPackageVersion(): string {
  const packageJson = new URL(
    new URL(".", import.meta.url).pathname.endsWith("/dist/") ? "../package.json" : "./package.json",
    import.meta.url,
  );
  return (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version;
}

export const fleetVersion: string =
  typeof SEF_BUNDLED_FLEET_VERSION === "string" ? SEF_BUNDLED_FLEET_VERSION : readPackageVersion();
