#!/usr/bin/env bash
# Installs a sef .rpm into a throwaway root (as throwaway-root.sh does for the .deb: an overlay over this machine's own
# root in a private mount namespace) with rpm itself (--nodeps: this root's libraries are Debian's, not in an rpm
# database) and runs its scriptlets for real: install OLDER_RPM (a build of a lower version), upgrade to RPM over it,
# erase. One "ok: ..." line per check.
# Usage: throwaway-root-rpm.sh SCRATCH_DIR RPM OLDER_RPM
set -euo pipefail

scratch="$1"
rpm_file="$2"
older_rpm="$3"
root="${scratch}/root"
mkdir -p "${scratch}/upper" "${scratch}/work" "${root}"
mount -t overlay overlay -o "lowerdir=/,upperdir=${scratch}/upper,workdir=${scratch}/work" "${root}"
mount -t proc proc "${root}/proc"
mkdir -p "${root}/run/sef-test"
in_root() { chroot "${root}" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
perms() { in_root stat -c '%a %U %G' "$1"; }

in_root userdel sef >/dev/null 2>&1 || true
cp "${rpm_file}" "${root}/run/sef-test/sef.rpm"
cp "${older_rpm}" "${root}/run/sef-test/sef-older.rpm"
in_root rpm -i --nodeps /run/sef-test/sef-older.rpm >"${scratch}/rpm.log" 2>&1 || { cat "${scratch}/rpm.log" >&2; fail "rpm -i"; }
in_root getent passwd sef >/dev/null || fail "no system user sef"
[[ "$(perms /etc/sef)" == "750 root sef" ]] || fail "/etc/sef is $(perms /etc/sef)"
[[ "$(perms /etc/sef/config.json)" == "640 root sef" ]] || fail "config.json is $(perms /etc/sef/config.json)"
[[ "$(perms /etc/sef/sef.env)" == "640 root sef" ]] || fail "sef.env is $(perms /etc/sef/sef.env)"
echo "ok: rpm -i: user sef, /etc/sef 0750, config and sef.env 0640 root:sef, version $(in_root /usr/bin/sef --version)"
[[ "$(readlink "${root}/etc/systemd/system/multi-user.target.wants/sef.service")" == */sef.service ]] ||
  fail "sef.service is not enabled after rpm -i without systemd running"
echo "ok: sef.service enabled without systemd running"

printf '{"sinks":["jsonl:/var/lib/sef/r.jsonl"]}\n' >"${root}/etc/sef/config.json"
mkdir -p "${root}/var/lib/sef"
echo marker >"${root}/var/lib/sef/marker"
before="$(in_root rpm -q --queryformat '%{VERSION}' sef)"
in_root rpm -U --nodeps /run/sef-test/sef.rpm >>"${scratch}/rpm.log" 2>&1 || { cat "${scratch}/rpm.log" >&2; fail "rpm -U"; }
after="$(in_root rpm -q --queryformat '%{VERSION}' sef)"
[[ "${after}" == "$(rpm -qp --queryformat '%{VERSION}' "${rpm_file}")" && "${after}" != "${before}" ]] || fail "rpm -U left version ${after} (was ${before})"
[[ "$(in_root /usr/bin/sef --version)" == "${after}" ]] || fail "rpm -U left sef --version at $(in_root /usr/bin/sef --version)"
grep -q jsonl "${root}/etc/sef/config.json" || fail "upgrade replaced the edited config"
[[ -f "${root}/var/lib/sef/marker" ]] || fail "upgrade lost /var/lib/sef"
echo "ok: rpm -U from ${before} to ${after} keeps config and data"

in_root rpm -e --nodeps sef >>"${scratch}/rpm.log" 2>&1 || fail "rpm -e"
[[ ! -e "${root}/usr/bin/sef" ]] || fail "rpm -e left /usr/bin/sef"
[[ -f "${root}/var/lib/sef/marker" ]] || fail "rpm -e removed /var/lib/sef"
[[ -f "${root}/etc/sef/config.json.rpmsave" ]] || fail "rpm -e did not keep the edited config as config.json.rpmsave"
[[ ! -e "${root}/etc/systemd/system/multi-user.target.wants/sef.service" ]] || fail "rpm -e left sef.service enabled"
echo "ok: rpm -e keeps data and the edited config (.rpmsave)"
