#!/usr/bin/env bash
# Installs (or upgrades) the sef agent on a Linux VM: the `npm pack` tarball to /opt/sef, its config to
# /etc/sef/config.json, and the hardened systemd unit sef.service, then enables and (re)starts it. Idempotent.
set -euo pipefail

readonly PREFIX=/opt/sef
readonly CONFIG_DIR=/etc/sef
readonly CONFIG_FILE=/etc/sef/config.json
readonly UNIT_FILE=/etc/systemd/system/sef.service
readonly SERVICE_USER=sef
readonly MIN_NODE_MAJOR=20
readonly MIN_NODE_MINOR=19

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
tarball=""
config=""
unit="${script_dir}/sef.service"
start=1

usage() {
  cat <<USAGE
Usage: install.sh --tarball FILE [--config FILE] [--unit FILE] [--no-start]

Installs the sef agent (Scheduled Events Forwarder) as the systemd service sef.service.

  --tarball FILE  the agent package made by \`npm pack\` (sef-VERSION.tgz); installed to ${PREFIX}
                  with its production dependencies (npm install --omit=dev)
  --config FILE   agent config (JSON) to install as ${CONFIG_FILE} (root:${SERVICE_USER}, 0640);
                  optional on upgrades, required when ${CONFIG_FILE} does not exist yet
  --unit FILE     systemd unit to install (default: sef.service next to this script)
  --no-start      install and enable, but do not (re)start the service
  -h, --help      show this help

Needs root, Node.js >= ${MIN_NODE_MAJOR}.${MIN_NODE_MINOR} at /usr/bin/node, and npm. Running it again with the same
files leaves the system as it is (the service is restarted to pick up the package).
USAGE
}

die() {
  echo "install.sh: $*" >&2
  exit 1
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --tarball) [[ $# -ge 2 ]] || die "--tarball needs a file"; tarball="$2"; shift 2 ;;
    --config) [[ $# -ge 2 ]] || die "--config needs a file"; config="$2"; shift 2 ;;
    --unit) [[ $# -ge 2 ]] || die "--unit needs a file"; unit="$2"; shift 2 ;;
    --no-start) start=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; echo >&2; die "unknown argument: $1" ;;
  esac
done

[[ -n "${tarball}" ]] || { usage >&2; die "--tarball is required"; }
[[ -f "${tarball}" ]] || die "no such tarball: ${tarball}"
[[ -f "${unit}" ]] || die "no such unit file: ${unit}"
[[ -z "${config}" || -f "${config}" ]] || die "no such config file: ${config}"
[[ -n "${config}" || -f "${CONFIG_FILE}" ]] || die "${CONFIG_FILE} does not exist: pass --config FILE"
[[ "$(id -u)" -eq 0 ]] || die "must run as root"

[[ -x /usr/bin/node ]] || die "/usr/bin/node not found: install Node.js >= ${MIN_NODE_MAJOR}.${MIN_NODE_MINOR} (apt-get install nodejs npm)"
command -v npm >/dev/null || die "npm not found: apt-get install npm"
/usr/bin/node -e "const [a, b] = process.versions.node.split('.').map(Number);
  process.exit(a > ${MIN_NODE_MAJOR} || (a === ${MIN_NODE_MAJOR} && b >= ${MIN_NODE_MINOR}) ? 0 : 1)" ||
  die "Node.js $(/usr/bin/node --version) is too old: sef needs >= ${MIN_NODE_MAJOR}.${MIN_NODE_MINOR}"
/usr/bin/node -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' "${config:-${CONFIG_FILE}}" ||
  die "config is not valid JSON: ${config:-${CONFIG_FILE}}"

# 1. The service user (no login, no home): owns /var/lib/sef and /var/log/sef (systemd creates them).
if ! id -u "${SERVICE_USER}" >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "${SERVICE_USER}"
fi

# 2. The package: unpack into a staging directory next to the prefix, install production dependencies there,
#    then swap it in, so a failed install never leaves a half-written /opt/sef behind.
stage="$(mktemp -d "${PREFIX}.stage.XXXXXX")"
trap 'rm -rf -- "${stage}"' EXIT
tar -xzf "${tarball}" -C "${stage}" --strip-components=1 --no-same-owner
[[ -f "${stage}/dist/cli/main.js" ]] || die "${tarball} has no dist/cli/main.js: build before npm pack"
(
  cd "${stage}"
  # The tarball ships a built dist/: drop the build-on-install hook (its tools are dev dependencies).
  npm pkg delete scripts.prepare
  npm install --omit=dev --no-audit --no-fund --no-update-notifier
)
chown -R root:root "${stage}"
chmod -R u=rwX,go=rX "${stage}"
if [[ -d "${PREFIX}" ]]; then
  rm -rf -- "${PREFIX}.previous"
  mv -- "${PREFIX}" "${PREFIX}.previous"
fi
mv -- "${stage}" "${PREFIX}"
rm -rf -- "${PREFIX}.previous"
trap - EXIT

# 3. The config: readable by the service user only (it may name resources; it never holds secrets with MI).
install -d -o root -g "${SERVICE_USER}" -m 0750 "${CONFIG_DIR}"
if [[ -n "${config}" ]]; then
  install -o root -g "${SERVICE_USER}" -m 0640 "${config}" "${CONFIG_FILE}"
else
  chown root:"${SERVICE_USER}" "${CONFIG_FILE}"
  chmod 0640 "${CONFIG_FILE}"
fi

# 4. The unit.
install -o root -g root -m 0644 "${unit}" "${UNIT_FILE}"
systemctl daemon-reload
systemctl enable sef.service
if [[ "${start}" -eq 1 ]]; then
  systemctl restart sef.service
  systemctl --no-pager --lines=0 status sef.service || true
fi
echo "sef installed: ${PREFIX} (config ${CONFIG_FILE}, unit ${UNIT_FILE})"
