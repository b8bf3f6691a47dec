// The hooks' polkit rule (infra/linux/50-sef-hooks.rules) judged by polkitd itself: a D-Bus system bus and polkitd
// started in mount and PID namespaces of their own (the rule bound over /etc/polkit-1/rules.d, a `sef` user added to a
// bound /etc/passwd), and `pkcheck` asking, for processes of each user, what systemd asks before it starts a unit.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "./support/bicep.js";

const scratch = mkdtempSync(join(tmpdir(), "sef-polkit-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The uid the namespace's /etc/passwd gives `sef` (free on the host); `nobody` is 65534 everywhere. */
const sefUid = 64_990;

interface Ask {
  uid: number;
  unit: string;
  verb: string;
  action?: string;
}

/**
 * Runs polkitd with the rule and asks `pkcheck` each question for a process of its uid; returns pkcheck's exit status
 * per question (0: authorized; else not: 1 not authorized, 2 authentication required).
 */
function askPolkitd(asks: readonly Ask[]): number[] {
  const dir = mkdtempSync(join(scratch, "run-"));
  mkdirSync(join(dir, "rules"));
  copyFileSync(join(repoRoot, "infra/linux/50-sef-hooks.rules"), join(dir, "rules/50-sef-hooks.rules"));
  const passwd = readFileSync("/etc/passwd", "utf8").trimEnd();
  writeFileSync(join(dir, "passwd"), `${passwd}\nsef:x:${sefUid}:${sefUid}::/nonexistent:/usr/sbin/nologin\n`);
  const questions = asks
    .map(
      (a, i) =>
        `setpriv --reuid=${a.uid} --regid=${a.uid} --clear-groups sleep 60 & p=$!\n` +
        // Asked only once the process runs as its user (before setpriv's switch it is still root's).
        `until [ "$(awk '/^Uid:/ {print $2}' /proc/$p/status)" = ${a.uid} ]; do sleep 0.01; done\n` +
        `pkcheck --action-id '${a.action ?? "org.freedesktop.systemd1.manage-units"}' --process "$p" ` +
        `--detail unit '${a.unit}' --detail verb '${a.verb}' >/dev/null 2>&1; echo "ask ${i}: $?"; kill "$p"`,
    )
    .join("\n");
  // polkitd registers on the bus a moment after it starts: root's own question is answered yes once it is there.
  const script = `set -u
mount --bind "$1/rules" /etc/polkit-1/rules.d
mount --bind "$1/passwd" /etc/passwd
mkdir -p /run/dbus && mount -t tmpfs tmpfs /run/dbus
dbus-daemon --system --fork --nopidfile
/usr/lib/polkit-1/polkitd --no-debug >"$1/polkitd.log" 2>&1 &
i=0
until pkcheck --action-id org.freedesktop.systemd1.manage-units --process $$ >/dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -gt 100 ] && { echo "polkitd did not answer"; exit 9; }; sleep 0.1
done
${questions}
`;
  const run = spawnSync("unshare", ["--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", script, "sh", dir], {
    encoding: "utf8",
    timeout: 60_000,
  });
  if (run.status !== 0) throw new Error(`polkitd run failed (${run.status}): ${run.stdout}${run.stderr}`);
  return asks.map((_, i) => Number(new RegExp(`^ask ${i}: (\\d+)$`, "m").exec(run.stdout)?.[1] ?? NaN));
}

describe("infra/linux/50-sef-hooks.rules under polkitd", () => {
  it("lets user sef start and stop sef-hook@NAME.service and nothing else; other users get no more than before", () => {
    const allowed: Ask[] = [
      { uid: sefUid, unit: "sef-hook@drain.service", verb: "start" },
      { uid: sefUid, unit: "sef-hook@drain-node_2.service", verb: "stop" },
    ];
    const refused: Ask[] = [
      { uid: sefUid, unit: "sef-hook@drain.service", verb: "restart" },
      { uid: sefUid, unit: "sef.service", verb: "start" },
      { uid: sefUid, unit: "reboot.target", verb: "start" },
      { uid: sefUid, unit: "sef-hook@../x.service", verb: "start" },
      { uid: sefUid, unit: "sef-hook@.service", verb: "start" },
      { uid: sefUid, unit: "sef-hook@drain.service", verb: "start", action: "org.freedesktop.login1.reboot" },
      { uid: 65_534, unit: "sef-hook@drain.service", verb: "start" },
    ];
    const answers = askPolkitd([...allowed, ...refused]);
    expect(answers.slice(0, allowed.length)).toEqual(allowed.map(() => 0));
    const refusedAnswers = answers.slice(allowed.length);
    refused.forEach((ask, i) => {
      const answer = refusedAnswers[i];
      expect(answer === 1 || answer === 2, `${JSON.stringify(ask)}: pkcheck ${answer}`).toBe(true);
    });
  });
});
