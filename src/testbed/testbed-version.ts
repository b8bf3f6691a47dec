// The testbed package's version (`sef-testbed --version`), from its package.json: beside this module in the sources,
// one level up from dist/.
import { readFileSync } from "node:fs";

const packageJson = new URL(
  new URL(".", import.meta.url).pathname.endsWith("/dist/") ? "../package.json" : "./package.json",
  import.meta.url,
);

export const testbedVersion: string = (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version;
