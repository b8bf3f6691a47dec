// How the Linux artifacts are compressed, by profile. `release` (`npm run package`): xz -6 on one thread and gzip -6,
// so the bytes never depend on the build machine's cores. The package tests' set-up uses the others: `fast`, the same
// formats, levels and contents with xz on every core (for what the tests measure or compare with a release); `quick`,
// the same formats at their lowest levels (xz -1, gzip -1: for what they only install, unpack or run); `stored`, .deb
// and .rpm payloads not compressed at all (for packages they only inspect or start an upgrade from).
import { availableParallelism } from "node:os";

export type CompressionProfile = "release" | "fast" | "quick" | "stored";

export type TarCompression = "gzip" | "xz";

/**
 * dpkg-deb's compression options. Its xz encoder cuts the stream into blocks whatever the number of threads, so a
 * `fast` .deb is byte for byte a `release` one (checked by hand: same SHA-256); a release keeps one thread all the same.
 */
export function debCompressionOptions(profile: CompressionProfile): string[] {
  if (profile === "stored") return ["-Znone"];
  return [
    "-Zxz",
    profile === "quick" ? "-z1" : "-z6",
    `--threads-max=${profile === "release" ? 1 : availableParallelism()}`,
  ];
}

/** rpmbuild's `_binary_payload`: xz level 6 or 1 (`T0`: a thread per core), or no compression (`ufdio`). */
export function rpmPayload(profile: CompressionProfile): string {
  return { release: "w6.xzdio", fast: "w6T0.xzdio", quick: "w1T0.xzdio", stored: "w0.ufdio" }[profile];
}

/**
 * The compressor of a tarball's tar stream: no name or time of its own (gzip -n). gzip at its default level 6 (0.6 %
 * larger than -9 for the agent's tarball, in a third of the time; the .tar.xz is the small one), -1 when `quick`; xz
 * -6 on one thread for a release, on every core otherwise (the stream is then cut into independent blocks: a slightly
 * larger file), -1 when `quick`. (`stored` means nothing to a tarball: it is compressed as `fast`.)
 */
export function tarCompressor(
  compression: TarCompression,
  profile: CompressionProfile,
): readonly [string, ...string[]] {
  const quick = profile === "quick";
  if (compression === "gzip") return ["gzip", "-n", quick ? "-1" : "-6"];
  return ["xz", quick ? "-1" : "-6", profile === "release" ? "-T1" : "-T0", "--check=crc64"];
}
