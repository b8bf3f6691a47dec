#!/usr/bin/env bash
# The Linux VM Application's install, update and remove actions for sef, run by Azure's VM Application agent as root
# from its download directory (.../<application name>/<version>/), where the bundle (this script, install.sh, the
# .deb/.rpm packages and their SHA256SUMS) was unpacked. Picks the .deb or .rpm for this machine, checks it against the
# bundle's SHA256SUMS (and --sha256 when given) and hands it to install.sh, the installer sef already has: config and
# /var/lib/sef survive upgrade, rollback (a lower version) and remove.
# The config is the VM Application's configuration file in the current directory: sef-config.json (the version's
# settings.configFileName) or, without that setting, Azure's default name, "<application name>_config" or
# "<application name>-config"; none keeps the installed config.
# Usage: vmapp.sh install|update|remove [--sha256 HEX] [CONFIG_FILE]
set -euo pipefail

readonly CONFIG_FILE=/etc/sef/config.json
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"

say() { echo "sef vmapp: $*"; }
die() {
  echo "sef vmapp: FAILED: $*" >&2
  exit 1
}

readonly USAGE="usage: vmapp.sh install|update|remove [--sha256 HEX] [CONFIG_FILE]"
action="${1:-}"
[[ "${action}" =~ ^(install|update|remove)$ ]] || die "${USAGE}"
shift
config=""
sha256=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sha256) [[ $# -ge 2 && "$2" =~ ^[0-9a-fA-F]{64}$ ]] || die "--sha256 needs 64 hex digits"; sha256="${2,,}"; shift 2 ;;
    -*) die "${USAGE}" ;;
    *) [[ -z "${config}" ]] || die "${USAGE}"; config="$1"; shift ;;
  esac
done
[[ "$(id -u)" -eq 0 ]] || die "must run as root (the VM Application agent runs it as root)"
if [[ -z "${config}" ]]; then
  # The agent's working directory is .../<application name>/<application version>.
  application="$(basename -- "$(dirname -- "${PWD}")")"
  for candidate in sef-config.json "${application}_config" "${application}-config"; do
    if [[ -f "${candidate}" ]]; then config="${PWD}/${candidate}"; break; fi
  done
fi
[[ -z "${config}" || -f "${config}" ]] || die "no such config file: ${config}"

# deb or rpm: the distribution's own family first (os-release), then whichever package manager is there.
package_family() {
  local ids=""
  if [[ -r /etc/os-release ]]; then
    # shellcheck disable=SC1091 # the running system's file
    ids="$(. /etc/os-release && echo "${ID:-} ${ID_LIKE:-}")"
  fi
  case " ${ids} " in
    *" debian "* | *" ubuntu "*) echo deb; return ;;
    *" rhel "* | *" fedora "* | *" centos "* | *" suse "* | *" sles "* | *" opensuse "* | *" mariner "* | *" azurelinux "* | *" amzn "*) echo rpm; return ;;
  esac
  if command -v dpkg >/dev/null; then echo deb
  elif command -v rpm >/dev/null; then echo rpm
  else die "neither dpkg nor rpm here (${ids:-no /etc/os-release}): use the sef tarball with install.sh"
  fi
}

# The bundle's package for this machine's family and architecture.
bundled_package() {
  local family="$1" pattern
  case "${family}:$(uname -m)" in
    deb:x86_64) pattern='sef_*_amd64.deb' ;;
    deb:aarch64) pattern='sef_*_arm64.deb' ;;
    rpm:x86_64) pattern='sef-*.x86_64.rpm' ;;
    rpm:aarch64) pattern='sef-*.aarch64.rpm' ;;
    *) die "no sef package for ${family} on $(uname -m)" ;;
  esac
  local found=()
  shopt -s nullglob
  # shellcheck disable=SC2206 # the pattern is meant to glob
  found=("${here}"/${pattern})
  shopt -u nullglob
  [[ "${#found[@]}" -eq 1 ]] || die "the bundle holds ${#found[@]} packages named ${pattern} (expected one)"
  echo "${found[0]}"
}

# Refuses PACKAGE unless its SHA-256 is its line's in the bundle's SHA256SUMS (and --sha256's, when given).
check_sha256() {
  local package="$1" name listed actual
  name="${package##*/}"
  [[ -f "${here}/SHA256SUMS" ]] || die "the bundle has no SHA256SUMS: refusing ${name}"
  listed="$(awk -v n="${name}" '($2 == n || $2 == "*" n) && $1 ~ /^[0-9a-fA-F]+$/ && length($1) == 64 { print tolower($1) }' "${here}/SHA256SUMS")"
  [[ -n "${listed}" && "${listed}" != *$'\n'* ]] || die "SHA256SUMS has no single line for ${name}: refusing it"
  actual="$(sha256sum -- "${package}" | cut -d' ' -f1)"
  for expected in "${listed}" ${sha256:+"${sha256}"}; do
    [[ "${actual}" == "${expected}" ]] || die "${name} has SHA-256 ${actual}, not ${expected}: refusing to install it"
  done
}

package_version() {
  case "$1" in
    *.deb) dpkg-deb -f "$1" Version ;;
    *.rpm) rpm -qp --queryformat '%{VERSION}' "$1" ;;
  esac
}

installed_version() {
  case "$1" in
    deb) dpkg-query -W -f '${Status} ${Version}\n' sef 2>/dev/null | awk '$3 == "installed" { print $4 }' || true ;;
    rpm) if rpm -q sef >/dev/null 2>&1; then rpm -q --queryformat '%{VERSION}' sef; fi ;; # rpm -q prints "not installed" on stdout
  esac
}

# Removes the package (no repository needed), keeping /etc/sef and /var/lib/sef: dpkg keeps the conffile; rpm -e renames an edited config to
# config.json.rpmsave, which is put back (a later install then leaves it in place and writes config.json.rpmnew).
remove_package() {
  local family="$1"
  case "${family}" in
    deb)
      if command -v apt-get >/dev/null; then DEBIAN_FRONTEND=noninteractive apt-get remove -y sef
      else dpkg -r sef
      fi
      ;;
    rpm)
      rpm -e sef # not dnf or yum: they load the repositories' metadata first, and fail where none is reachable
      if [[ -f "${CONFIG_FILE}.rpmsave" && ! -e "${CONFIG_FILE}" ]]; then mv -- "${CONFIG_FILE}.rpmsave" "${CONFIG_FILE}"; fi
      ;;
  esac
}

family="$(package_family)"
installed="$(installed_version "${family}")"

if [[ "${action}" == remove ]]; then
  if [[ -z "${installed}" ]]; then
    say "sef is not installed (${family}): nothing to remove"
    exit 0
  fi
  remove_package "${family}"
  say "removed sef ${installed}; kept ${CONFIG_FILE} and /var/lib/sef"
  exit 0
fi

package="$(bundled_package "${family}")"
check_sha256 "${package}"
version="$(package_version "${package}")"
# A rollback (the installed version is newer): package managers refuse a downgrade by default, so remove first
# (config and data stay) and install this one.
if [[ -n "${installed}" && "${installed}" != "${version}" && "$(printf '%s\n%s\n' "${installed}" "${version}" | sort -V | tail -n 1)" == "${installed}" ]]; then
  say "rolling back from ${installed} to ${version}"
  remove_package "${family}"
fi

# Without a VM Application config, the installed one is kept through whatever the package manager does with its
# config file (an rpm install over a config it does not own, a reinstall after remove): install.sh puts it back.
if [[ -z "${config}" && -f "${CONFIG_FILE}" ]]; then
  config="${PWD}/sef-config-kept.json"
  install -m 0600 "${CONFIG_FILE}" "${config}"
fi
args=(--package "${package}")
if [[ -n "${config}" ]]; then args+=(--config "${config}"); fi
# Without systemd as PID 1 (an image build, a chroot) install.sh can only enable the unit for the next boot.
if [[ ! -d /run/systemd/system ]]; then args+=(--no-start); fi
say "${action} ${version} (${family}, $(uname -m)) from ${package##*/}${config:+ with config ${config}}"
bash "${here}/install.sh" "${args[@]}"
