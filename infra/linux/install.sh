#!/usr/bin/env bash
# Installs (or upgrades) the sef agent from its artifact: a .deb (apt/dpkg), an .rpm (rpm) or the
# sef-VERSION-linux-ARCH.tar.gz or .tar.xz (unpacked to /opt/sef, linked as /usr/bin/sef, unit to /etc/systemd/system). Then
# installs the config, starts sef.service and checks it: config accepted, service active, /readyz ready within
# 30 s. Fails loudly (exit 1, with the service's last log lines) otherwise. No npm, no compiler: the runtime ships inside.
set -euo pipefail

readonly CONFIG_DIR=/etc/sef
readonly CONFIG_FILE=/etc/sef/config.json
readonly ENV_FILE=/etc/sef/sef.env
readonly TAR_PREFIX=/opt/sef
readonly SERVICE=sef.service

package=""
config=""
env_file=""
start=1
ready_timeout_s=30

usage() {
  cat <<USAGE
Usage: install.sh --package FILE [--config FILE] [--env-file FILE] [--no-start] [--ready-timeout SECONDS]

Installs the sef agent (Scheduled Events Forwarder) as the systemd service ${SERVICE} and checks that it runs.

  --package FILE        sef_VERSION_ARCH.deb, sef-VERSION-1.ARCH.rpm or sef-VERSION-linux-ARCH.tar.gz (.tar.xz)
  --config FILE         agent config (JSON) to install as ${CONFIG_FILE} (root:sef, 0640)
  --env-file FILE       secrets as VAR=value lines, installed as ${ENV_FILE} (root:sef, 0640)
  --no-start            install and enable, but do not (re)start or check the service
  --ready-timeout S     how long /readyz may take to answer 200 (default ${ready_timeout_s})
  -h, --help            show this help

Needs root and systemd. Running it again with the same files leaves the system as it is (the service restarts).
USAGE
}

die() {
  echo "install.sh: FAILED: $*" >&2
  exit 1
}

service_failed() {
  echo "install.sh: FAILED: $*" >&2
  systemctl --no-pager --lines=0 status "${SERVICE}" >&2 || true
  journalctl --no-pager -u "${SERVICE}" -n 30 >&2 || true
  exit 1
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --package) [[ $# -ge 2 ]] || die "--package needs a file"; package="$2"; shift 2 ;;
    --config) [[ $# -ge 2 ]] || die "--config needs a file"; config="$2"; shift 2 ;;
    --env-file) [[ $# -ge 2 ]] || die "--env-file needs a file"; env_file="$2"; shift 2 ;;
    --no-start) start=0; shift ;;
    --ready-timeout) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die "--ready-timeout needs whole seconds"; ready_timeout_s="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; echo >&2; die "unknown argument: $1" ;;
  esac
done

[[ -n "${package}" ]] || { usage >&2; die "--package is required"; }
[[ -f "${package}" ]] || die "no such package: ${package}"
[[ -z "${config}" || -f "${config}" ]] || die "no such config file: ${config}"
[[ -z "${env_file}" || -f "${env_file}" ]] || die "no such env file: ${env_file}"
[[ "$(id -u)" -eq 0 ]] || die "must run as root"
command -v systemctl >/dev/null || die "systemctl not found: sef runs as a systemd service"
package="$(readlink -f -- "${package}")"

# systemd is PID 1 (not so in an image build or a chroot: the unit is then enabled for the next boot only).
systemd_running() { [[ -d /run/systemd/system ]]; }

install_tarball() {
  local stage
  stage="$(mktemp -d "${TAR_PREFIX}.stage.XXXXXX")"
  # shellcheck disable=SC2064 # expand now: the trap must remove this stage directory
  trap "rm -rf -- '${stage}'" EXIT
  local decompress=-z
  [[ "${package}" == *.tar.xz ]] && decompress=-J
  tar "${decompress}" -xf "${package}" -C "${stage}" --strip-components=1 --no-same-owner
  [[ -x "${stage}/bin/sef" && -x "${stage}/lib/sef/node" ]] || die "${package} is not a sef tarball (no bin/sef, lib/sef/node)"
  chown -R root:root "${stage}"
  if [[ -d "${TAR_PREFIX}" ]]; then
    rm -rf -- "${TAR_PREFIX}.previous"
    mv -- "${TAR_PREFIX}" "${TAR_PREFIX}.previous"
  fi
  mv -- "${stage}" "${TAR_PREFIX}"
  trap - EXIT
  ln -sfn "${TAR_PREFIX}/bin/sef" /usr/bin/sef
  if ! getent passwd sef >/dev/null; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin sef
  fi
  install -d -o root -g sef -m 0750 "${CONFIG_DIR}"
  [[ -f "${CONFIG_FILE}" ]] || install -o root -g sef -m 0640 "${TAR_PREFIX}/share/sef/config.json" "${CONFIG_FILE}"
  [[ -f "${ENV_FILE}" ]] || install -o root -g sef -m 0640 "${TAR_PREFIX}/share/sef/sef.env" "${ENV_FILE}"
  install -o root -g root -m 0644 "${TAR_PREFIX}/share/sef/sef.service" "/etc/systemd/system/${SERVICE}"
  if systemd_running; then systemctl daemon-reload; fi
  systemctl enable "${SERVICE}"
}

# 1. The artifact. Packages run their own maintainer scripts (user, permissions, enable, restart on upgrade).
case "${package}" in
  *.deb)
    if command -v apt-get >/dev/null; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -o Dpkg::Options::=--force-confold "${package}"
    else
      DEBIAN_FRONTEND=noninteractive dpkg -i --force-confold "${package}"
    fi
    ;;
  *.rpm)
    # rpm itself, not dnf or yum: they load every repository's metadata first and fail where none is reachable (an
    # isolated VM, an image build); the .rpm needs only what any RPM system has installed.
    rpm -Uvh --replacepkgs "${package}"
    ;;
  *.tar.gz | *.tgz | *.tar.xz) install_tarball ;;
  *) die "unknown package type: ${package} (.deb, .rpm, .tar.gz or .tar.xz)" ;;
esac
[[ -x /usr/bin/sef ]] || die "/usr/bin/sef is missing after installing ${package}"

# 2. The config must be accepted before it replaces the installed one and the service is (re)started on it.
candidate="${config:-${CONFIG_FILE}}"
if /usr/bin/sef --help 2>/dev/null | grep -Eq '^ +check-config( |$)'; then
  /usr/bin/sef check-config --config "${candidate}" || die "${candidate} is not a valid sef config (see above)"
else
  /usr/bin/sef run --help >/dev/null || die "/usr/bin/sef does not run"
  node="$(dirname -- "$(readlink -f /usr/bin/sef)")/../lib/sef/node"
  "${node}" -e 'JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"))' "${candidate}" ||
    die "${candidate} is not valid JSON"
fi

# 3. Config and secrets: readable by root and the service's group only.
if [[ -n "${config}" ]]; then install -o root -g sef -m 0640 "${config}" "${CONFIG_FILE}"; fi
if [[ -n "${env_file}" ]]; then install -o root -g sef -m 0640 "${env_file}" "${ENV_FILE}"; fi

if [[ "${start}" -eq 0 ]]; then
  echo "sef installed, not started: $(/usr/bin/sef --version) (config ${CONFIG_FILE})"
  exit 0
fi

# 4. (Re)start and check: active, and /readyz answers 200 within the timeout.
systemd_running || die "systemd is not running here: install with --no-start, the service starts at the next boot"
systemctl restart "${SERVICE}" || service_failed "systemctl restart ${SERVICE}"
node="$(dirname -- "$(readlink -f /usr/bin/sef)")/../lib/sef/node"
# shellcheck disable=SC2016 # a JavaScript template literal, not a shell expansion
readyz_url="$("${node}" -e '
  const c = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
  const m = c.metrics ?? {};
  if (m.enabled === false) process.exit(0);
  const port = c.metricsPort ?? m.port ?? 9464;
  console.log(`http://${m.host ?? "127.0.0.1"}:${port}/readyz`);' "${CONFIG_FILE}")"
deadline=$((SECONDS + ready_timeout_s))
ready=0
while ((SECONDS < deadline)); do
  systemctl is-active --quiet "${SERVICE}" || { sleep 1; systemctl is-active --quiet "${SERVICE}" || service_failed "${SERVICE} is not active"; }
  if [[ -z "${readyz_url}" ]]; then ready=1; break; fi
  if "${node}" -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' "${readyz_url}"; then
    ready=1
    break
  fi
  sleep 1
done
[[ "${ready}" -eq 1 ]] || service_failed "${readyz_url} did not answer 200 within ${ready_timeout_s} s"
echo "sef installed and ready: $(/usr/bin/sef --version) (config ${CONFIG_FILE}${readyz_url:+, ${readyz_url}})"
