#!/usr/bin/env bash
# Builds the VM Application packages of a release from `npm run package`'s artifacts: sef-VERSION-vmapp-linux.tar
# (vmapp.sh, install.sh and every sef .deb/.rpm of that version found, x64 and arm64) and sef-VERSION-vmapp-windows.zip
# (vmapp.ps1 and sef-VERSION-win-x64.zip), each with a SHA256SUMS of the sef packages it holds, which vmapp.sh and
# vmapp.ps1 check before installing. When ARTIFACTS_DIR has a SHA256SUMS (npm run package writes one), every package
# is checked against it first. Prints the paths of the packages it wrote, one a line.
# Usage: bundle.sh ARTIFACTS_DIR VERSION OUT_DIR
set -euo pipefail

die() {
  echo "bundle.sh: FAILED: $*" >&2
  exit 1
}

[[ $# -eq 3 ]] || die "usage: bundle.sh ARTIFACTS_DIR VERSION OUT_DIR"
artifacts="$1"
version="$2"
out="$3"
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
[[ -d "${artifacts}" ]] || die "no such directory: ${artifacts}"
mkdir -p "${out}"
out="$(cd -- "${out}" && pwd)"

linux=()
for name in "sef_${version}_amd64.deb" "sef_${version}_arm64.deb" "sef-${version}-1.x86_64.rpm" "sef-${version}-1.aarch64.rpm"; do
  if [[ -f "${artifacts}/${name}" ]]; then linux+=("${name}"); fi
done
windows_zip="sef-${version}-win-x64.zip"
[[ "${#linux[@]}" -gt 0 || -f "${artifacts}/${windows_zip}" ]] || die "${artifacts} holds no sef ${version} .deb, .rpm or win-x64.zip (run npm run package)"

# Checks the packages against the artifacts' SHA256SUMS when there is one, then writes their lines into DIR/SHA256SUMS.
sums_into() {
  local dir="$1" name listed
  shift
  (cd -- "${artifacts}" && sha256sum -- "$@") >"${dir}/SHA256SUMS"
  [[ -f "${artifacts}/SHA256SUMS" ]] || return 0
  for name in "$@"; do
    listed="$(awk -v n="${name}" '$2 == n || $2 == "*" n { print $1 }' "${artifacts}/SHA256SUMS")"
    grep -qxF "${listed:-none}  ${name}" "${dir}/SHA256SUMS" || die "${name} does not match ${artifacts}/SHA256SUMS (${listed:-not listed})"
  done
}

if [[ "${#linux[@]}" -gt 0 ]]; then
  stage="$(mktemp -d)"
  # shellcheck disable=SC2064 # expand now: the trap removes this stage directory
  trap "rm -rf -- '${stage}'" EXIT
  install -m 0755 "${here}/vmapp.sh" "${stage}/vmapp.sh"
  install -m 0755 "${here}/../linux/install.sh" "${stage}/install.sh"
  for name in "${linux[@]}"; do cp -- "${artifacts}/${name}" "${stage}/${name}"; done
  sums_into "${stage}" "${linux[@]}"
  # Already compressed packages: a plain tar. Entries sorted by name, root-owned.
  mapfile -t entries < <(cd -- "${stage}" && LC_ALL=C ls)
  tar --owner=0 --group=0 --numeric-owner -cf "${out}/sef-${version}-vmapp-linux.tar" -C "${stage}" "${entries[@]}"
  echo "${out}/sef-${version}-vmapp-linux.tar"
fi

if [[ -f "${artifacts}/${windows_zip}" ]]; then
  # Python's zipfile (there on any machine with the Azure CLI): the entries at the top of the zip; the sef zip stored.
  sums="$(mktemp -d)"
  sums_into "${sums}" "${windows_zip}"
  python3 - "${out}/sef-${version}-vmapp-windows.zip" "${here}/vmapp.ps1" "${artifacts}/${windows_zip}" "${sums}/SHA256SUMS" <<'PY' || die "writing the Windows zip failed"
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.write(sys.argv[4], "SHA256SUMS", zipfile.ZIP_DEFLATED)
    z.write(sys.argv[2], "vmapp.ps1", zipfile.ZIP_DEFLATED)
    z.write(sys.argv[3], os.path.basename(sys.argv[3]), zipfile.ZIP_STORED)
PY
  rm -rf -- "${sums}"
  echo "${out}/sef-${version}-vmapp-windows.zip"
fi
