#!/usr/bin/env bash
# Installs a sef .deb into a throwaway root and exercises the package's life cycle there, for
# test/package/deb-install.test.ts. Run inside `unshare --mount`: the root is an overlay over this machine's own
# Debian (so dpkg, useradd and the libraries are real) whose writes land in a scratch directory; nothing on the
# machine itself changes. Prints one "ok: ..." line per check; exits non-zero at the first failure. With OLDER_DEB
# (a build of a lower version), that one is installed first and DEB is installed over it: a real upgrade.
# Usage: throwaway-root.sh SCRATCH_DIR DEB IMDS_URL|--install-only [TARBALL INSTALL_SH [OLDER_DEB]]
set -euo pipefail

scratch="$1"
deb="$2"
imds_url="$3"
tarball="${4:-}"
install_sh="${5:-}"
older_deb="${6:-}"
root="${scratch}/root"
mkdir -p "${scratch}/upper" "${scratch}/work" "${root}"
mount -t overlay overlay -o "lowerdir=/,upperdir=${scratch}/upper,workdir=${scratch}/work" "${root}"
mount -t proc proc "${root}/proc"
mkdir -p "${root}/run/sef-test"
in_root() { chroot "${root}" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# A clean root: no sef installed, no sef user (this machine may have neither anyway).
in_root dpkg --purge sef >/dev/null 2>&1 || true
in_root userdel sef >/dev/null 2>&1 || true
cp "${deb}" "${root}/run/sef-test/sef.deb"
first=/run/sef-test/sef.deb
if [[ -n "${older_deb}" ]]; then
  cp "${older_deb}" "${root}/run/sef-test/sef-older.deb"
  first=/run/sef-test/sef-older.deb
fi

start_ns=$(date +%s%N)
in_root env DEBIAN_FRONTEND=noninteractive dpkg -i "${first}" >"${scratch}/dpkg-install.log" 2>&1 ||
  { cat "${scratch}/dpkg-install.log" >&2; fail "dpkg -i"; }
echo "ok: installed in $(( ($(date +%s%N) - start_ns) / 1000000 )) ms"

in_root getent passwd sef >/dev/null || fail "no system user sef"
[[ "$(in_root stat -c '%a %U %G' /etc/sef/config.json)" == "640 root sef" ]] || fail "config.json is $(in_root stat -c '%a %U %G' /etc/sef/config.json)"
[[ "$(in_root stat -c '%a %U %G' /etc/sef/sef.env)" == "640 root sef" ]] || fail "sef.env is $(in_root stat -c '%a %U %G' /etc/sef/sef.env)"
[[ "$(in_root stat -c '%a %U %G' /etc/sef)" == "750 root sef" ]] || fail "/etc/sef is $(in_root stat -c '%a %U %G' /etc/sef)"
echo "ok: user sef, /etc/sef 0750 and its files 0640 root:sef"
# systemd is installed in this root but not running (as in an image build): the unit is enabled for the next boot.
[[ -d /run/systemd/system ]] && fail "this test needs a root where systemd does not run"
[[ "$(readlink "${root}/etc/systemd/system/multi-user.target.wants/sef.service")" == */sef.service ]] ||
  fail "sef.service is not enabled after dpkg -i without systemd running"
echo "ok: sef.service enabled without systemd running"
echo "ok: version $(in_root /usr/bin/sef --version)"
[[ "${imds_url}" != "--install-only" ]] || exit 0

# An operator's config and the agent's state (as StateDirectory= makes it), then the upgrade: both stay.
in_root install -d -o sef -g sef -m 0750 /var/lib/sef
printf '{"imdsUrl":"%s","sinks":["jsonl:/var/lib/sef/records.jsonl"],"dataDir":"/var/lib/sef","metrics":{"enabled":false}}\n' "${imds_url}" >"${root}/etc/sef/config.json"
echo "marker" >"${root}/var/lib/sef/marker"
if [[ -n "${older_deb}" ]]; then
  # shellcheck disable=SC2016 # dpkg-query's own format, not the shell's
  before="$(in_root dpkg-query -W -f '${Version}' sef)"
  in_root env DEBIAN_FRONTEND=noninteractive dpkg -i --force-confold /run/sef-test/sef.deb >>"${scratch}/dpkg-install.log" 2>&1 || fail "dpkg -i (upgrade)"
  # shellcheck disable=SC2016
  after="$(in_root dpkg-query -W -f '${Version}' sef)"
  [[ "${after}" == "$(dpkg-deb -f "${deb}" Version)" && "${after}" != "${before}" ]] || fail "upgrade left version ${after} (was ${before})"
  [[ "$(in_root /usr/bin/sef --version)" == "${after}" ]] || fail "upgrade left sef --version at $(in_root /usr/bin/sef --version)"
  grep -q "${imds_url}" "${root}/etc/sef/config.json" || fail "upgrade replaced the edited config"
  [[ -f "${root}/var/lib/sef/marker" ]] || fail "upgrade lost /var/lib/sef"
  echo "ok: upgrade from ${before} to ${after} keeps config and data"
fi

# The agent as the service runs it (user sef, config from /etc/sef, state in /var/lib/sef).
chroot --userspec=sef:sef "${root}" /usr/bin/sef run --config /etc/sef/config.json >"${scratch}/agent.out" 2>"${scratch}/agent.err" &
agent=$!
for _ in $(seq 1 150); do
  grep -q '"RecordType":"Transition"' "${root}/var/lib/sef/records.jsonl" 2>/dev/null && break
  sleep 0.1
done
kill -TERM "${agent}"
wait "${agent}" || fail "the agent exited with $? after SIGTERM: $(tail -5 "${scratch}/agent.err")"
grep -q '"RecordType":"Transition"' "${root}/var/lib/sef/records.jsonl" || fail "no Transition record: $(tail -5 "${scratch}/agent.err")"
echo "ok: a transition record arrived: $(grep -m1 '"RecordType":"Transition"' "${root}/var/lib/sef/records.jsonl")"

# Removal keeps config and data; purge deletes them.
in_root dpkg -r sef >>"${scratch}/dpkg-install.log" 2>&1 || fail "dpkg -r"
[[ ! -e "${root}/usr/bin/sef" ]] || fail "dpkg -r left /usr/bin/sef"
[[ -f "${root}/etc/sef/config.json" && -f "${root}/var/lib/sef/marker" ]] || fail "dpkg -r removed config or data"
echo "ok: remove keeps config and data"
in_root dpkg -P sef >>"${scratch}/dpkg-install.log" 2>&1 || fail "dpkg -P"
[[ ! -e "${root}/etc/sef" && ! -e "${root}/var/lib/sef" ]] || fail "purge left /etc/sef or /var/lib/sef"
echo "ok: purge deletes config and data"

# The tarball through install.sh (no systemd here: systemctl ignores daemon-reload in a chroot, --no-start skips the
# start and readiness check): /opt/sef, /usr/bin/sef, user, config 0640 root:sef, the unit; a bad config fails loudly.
[[ -n "${tarball}" ]] || exit 0
tarball_name="sef.tar.${tarball##*.tar.}" # keeps .gz or .xz: install.sh picks the decompressor by the name
cp "${tarball}" "${root}/run/sef-test/${tarball_name}"
cp "${install_sh}" "${root}/run/sef-test/install.sh"
printf '{"sinks":["stdout"]}\n' >"${root}/run/sef-test/config.json"
in_root bash /run/sef-test/install.sh --package "/run/sef-test/${tarball_name}" --config /run/sef-test/config.json --no-start \
  >"${scratch}/install-sh.log" 2>&1 || { cat "${scratch}/install-sh.log" >&2; fail "install.sh --package ${tarball_name}"; }
[[ "$(in_root readlink -f /usr/bin/sef)" == /opt/sef/bin/sef ]] || fail "/usr/bin/sef is not linked to /opt/sef"
[[ "$(in_root stat -c '%a %U %G' /etc/sef/config.json)" == "640 root sef" ]] || fail "install.sh left config.json $(in_root stat -c '%a %U %G' /etc/sef/config.json)"
[[ -f "${root}/etc/systemd/system/sef.service" ]] || fail "install.sh did not install the unit"
echo "ok: install.sh installed the tarball: $(in_root /usr/bin/sef --version)"
printf '{"sinks":' >"${root}/run/sef-test/broken.json"
if in_root bash /run/sef-test/install.sh --package "/run/sef-test/${tarball_name}" --config /run/sef-test/broken.json --no-start \
  >"${scratch}/install-sh-broken.log" 2>&1; then
  fail "install.sh accepted a broken config"
fi
grep -q "FAILED" "${scratch}/install-sh-broken.log" || fail "install.sh failed without saying so"
cmp -s "${root}/etc/sef/config.json" "${root}/run/sef-test/config.json" || fail "install.sh replaced the config with a broken one"
echo "ok: install.sh fails loudly on a broken config: $(grep -m1 FAILED "${scratch}/install-sh-broken.log")"
