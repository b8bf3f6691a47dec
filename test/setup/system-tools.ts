// The Debian packages the tests run for real (never skipped), each with how to tell it is there: a command on PATH, a
// module Debian's own Python imports, or a file it installs. Pure data plus the probe; prepare.ts installs or names what is missing.
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";

/** Where Debian's arm64 cross packages put the AArch64 glibc and its loader (qemu-aarch64's `-L`). */
export const arm64SysrootDir = "/usr/aarch64-linux-gnu";

export interface SystemPackage {
  /** The Debian package name (`apt-get install NAME`). */
  readonly name: string;
  /** Why the tests need it (which tests fail without it). */
  readonly usedBy: string;
  /** Commands it provides that the tests run, looked up on PATH. */
  readonly commands?: readonly string[];
  /** Python modules it provides, imported by /usr/bin/python3 (Debian's, not a pyenv one). */
  readonly pythonModules?: readonly string[];
  /** Files it installs that the tests use (libraries with no command: the arm64 cross libraries). */
  readonly files?: readonly string[];
}

export const systemPackages: readonly SystemPackage[] = [
  {
    name: "git",
    usedBy: "packaging (SOURCE_DATE_EPOCH from the last commit) and test/deploy/shellcheck.test.ts (lists the scripts)",
    commands: ["git"],
  },
  {
    name: "shellcheck",
    usedBy: "test/deploy/shellcheck.test.ts (every shell script), test/deploy/infra.test.ts",
    commands: ["shellcheck"],
  },
  {
    name: "systemd",
    usedBy: "test/deploy/infra.test.ts (systemd-analyze verify of sef.service)",
    commands: ["systemd-analyze"],
  },
  {
    name: "polkitd",
    usedBy: "test/deploy/polkit.test.ts (polkitd judges the hooks' polkit rule; pkcheck asks it)",
    commands: ["pkcheck"],
    files: ["/usr/lib/polkit-1/polkitd"],
  },
  {
    name: "dbus-daemon",
    usedBy: "test/deploy/polkit.test.ts (the system bus polkitd answers on)",
    commands: ["dbus-daemon"],
  },
  { name: "dpkg", usedBy: "packaging (.deb) and test/package/linux-packages.test.ts", commands: ["dpkg", "dpkg-deb"] },
  { name: "xz-utils", usedBy: "packaging (.tar.xz) and test/package/linux-packages.test.ts", commands: ["xz"] },
  {
    name: "util-linux",
    usedBy: "unshare (throwaway roots, net namespaces) and setpriv (test/integration/data-dir.test.ts)",
    commands: ["unshare", "setpriv"],
  },
  { name: "rpm", usedBy: "packaging (.rpm) and test/package/linux-packages.test.ts", commands: ["rpm", "rpmbuild"] },
  {
    name: "dnf",
    usedBy: "test/package/vmapp.test.ts (an RPM root whose repository is unreachable: installs must not need it)",
    commands: ["dnf"],
  },
  { name: "wixl", usedBy: "test/package/windows-artifacts.test.ts (builds the MSI)", commands: ["wixl"] },
  {
    name: "msitools",
    usedBy: "test/package/windows-artifacts.test.ts (reads the MSI)",
    commands: ["msiinfo", "msiextract"],
  },
  { name: "podman", usedBy: "test/package/container-image.test.ts", commands: ["podman"] },
  { name: "runc", usedBy: "test/package/container-image.test.ts (podman's runtime)", commands: ["runc"] },
  {
    name: "qemu-user",
    usedBy: "test/package/arm64-qemu.test.ts (runs the arm64 package's runtime)",
    commands: ["qemu-aarch64"],
  },
  {
    name: "python3-azure",
    usedBy: "test/interop/*-python.test.ts (Microsoft's Python clients)",
    pythonModules: ["azure.eventhub", "azure.identity", "azure.monitor.ingestion"],
  },
  {
    name: "python3-uamqp",
    usedBy: "test/interop/eventhubs-python.test.ts (the C AMQP stack)",
    pythonModules: ["uamqp"],
  },
  ...(["libc6", "libgcc-s1", "libstdc++6"] as const).map((lib) => ({
    name: `${lib}-arm64-cross`,
    usedBy: "test/package/arm64-qemu.test.ts (the arm64 runtime's libraries, given to qemu-aarch64 with -L)",
    files: [
      join(
        arm64SysrootDir,
        "lib",
        { libc6: "libc.so.6", "libgcc-s1": "libgcc_s.so.1", "libstdc++6": "libstdc++.so.6" }[lib],
      ),
    ],
  })),
];

export const systemPython = "/usr/bin/python3";

/** Whether `command` is an executable file in one of PATH's directories. */
export function onPath(command: string, path: string = process.env.PATH ?? ""): boolean {
  return path.split(delimiter).some((dir) => {
    if (dir === "") return false;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Whether Debian's Python imports every one of `modules`. */
export function pythonImports(modules: readonly string[]): boolean {
  const run = spawnSync(systemPython, ["-c", modules.map((m) => `import ${m}`).join("; ")], {
    stdio: "ignore",
    timeout: 60_000,
  });
  return run.status === 0;
}

/** The packages whose commands, modules or files are missing, in table order. */
export function missingPackages(path: string = process.env.PATH ?? ""): SystemPackage[] {
  return systemPackages.filter(
    (p) =>
      !(p.commands ?? []).every((c) => onPath(c, path)) ||
      !(p.pythonModules === undefined || pythonImports(p.pythonModules)) ||
      !(p.files ?? []).every((f) => existsSync(f)),
  );
}

/** The one command that installs `packages` on Debian or Ubuntu. */
export function installCommand(packages: readonly SystemPackage[]): string {
  return `apt-get install -y --no-install-recommends ${packages.map((p) => p.name).join(" ")}`;
}
