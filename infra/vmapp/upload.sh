#!/usr/bin/env bash
# Publishes a sef release as VM Application versions with the Azure CLI: bundles `npm run package`'s artifacts
# (bundle.sh), uploads the bundles and the agent config to a blob container (Entra ID auth, no account keys), and
# creates the gallery, the applications sef-linux and sef-windows (when missing) and their version VERSION, whose
# commands and file names come from commands.json (as bicep/vmapp.bicep's do), each with its bundle's SHA-256 in place
# of @BUNDLE_SHA256@ (the command refuses a download with another hash).
# Usage: see --help. --dry-run prints the az commands instead of running them.
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
commands_json="${here}/commands.json"
resource_group=""
storage_account=""
container="sef-releases"
gallery=""
version=""
artifacts=""
config=""
location=""
target_regions=""
linux_app="sef-linux"
windows_app="sef-windows"
exclude_from_latest="false"
sas_days=7
dry_run=0

usage() {
  cat <<USAGE
Usage: upload.sh --resource-group RG --storage-account NAME --gallery NAME --version X.Y.Z --artifacts DIR
                 [--config FILE] [--container NAME] [--location REGION] [--target-regions "R1 R2"]
                 [--linux-app NAME] [--windows-app NAME] [--exclude-from-latest] [--sas-days N] [--dry-run]

Uploads sef's VM Application packages and config to the container and creates the application versions.

  --resource-group RG     resource group of the gallery and the storage account (must exist)
  --storage-account NAME  storage account for the packages (created when missing: no shared keys, no public access)
  --gallery NAME          Azure Compute Gallery (created when missing)
  --version X.Y.Z         the release (the artifacts' version; also the application versions' name)
  --artifacts DIR         npm run package's output (sef_X.Y.Z_amd64.deb, ...rpm, sef-X.Y.Z-win-x64.zip)
  --config FILE           agent config (the main deployment's agentConfig output) as the versions' configuration
  --container NAME        blob container (default ${container})
  --location REGION       region of new resources and the versions' source (default: the resource group's)
  --target-regions LIST   regions to replicate the versions to (default: the location only)
  --linux-app, --windows-app   application names (default ${linux_app}, ${windows_app})
  --exclude-from-latest   do not make these versions "latest" (a canary release)
  --sas-days N            lifetime of the read-only user delegation SAS the gallery copies from (default ${sas_days}, at most 7)
  --dry-run               print the az commands on stderr, run nothing (bundles are still built)
Needs az (logged in, with Storage Blob Data Contributor on the account and Contributor on the resource group) and python3.
USAGE
}

die() {
  echo "upload.sh: FAILED: $*" >&2
  exit 1
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --resource-group) resource_group="${2:?--resource-group needs a value}"; shift 2 ;;
    --storage-account) storage_account="${2:?--storage-account needs a value}"; shift 2 ;;
    --gallery) gallery="${2:?--gallery needs a value}"; shift 2 ;;
    --version) version="${2:?--version needs a value}"; shift 2 ;;
    --artifacts) artifacts="${2:?--artifacts needs a directory}"; shift 2 ;;
    --config) config="${2:?--config needs a file}"; shift 2 ;;
    --container) container="${2:?--container needs a value}"; shift 2 ;;
    --location) location="${2:?--location needs a value}"; shift 2 ;;
    --target-regions) target_regions="${2:?--target-regions needs a value}"; shift 2 ;;
    --linux-app) linux_app="${2:?--linux-app needs a value}"; shift 2 ;;
    --windows-app) windows_app="${2:?--windows-app needs a value}"; shift 2 ;;
    --exclude-from-latest) exclude_from_latest="true"; shift ;;
    --sas-days) [[ "${2:-}" =~ ^[1-7]$ ]] || die "--sas-days needs 1 to 7"; sas_days="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

for required in resource_group storage_account gallery version artifacts; do
  [[ -n "${!required}" ]] || { usage >&2; die "--${required//_/-} is required"; }
done
[[ "${version}" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "--version must be MAJOR.MINOR.PATCH (a gallery application version name), not ${version}"
[[ -d "${artifacts}" ]] || die "no such directory: ${artifacts}"
[[ -z "${config}" || -f "${config}" ]] || die "no such config file: ${config}"
command -v python3 >/dev/null || die "python3 is needed (it reads ${commands_json} and writes the Windows zip)"
if [[ "${dry_run}" -eq 0 ]]; then command -v az >/dev/null || die "the Azure CLI (az) is needed"; fi

# Runs az, or prints it (shell-quoted, on stderr) with --dry-run. Dry runs answer queries with placeholders.
az_run() {
  if [[ "${dry_run}" -eq 1 ]]; then
    { printf 'az'; printf ' %q' "$@"; printf '\n'; } >&2
    case " $* " in
      *" generate-sas "*) echo "https://${storage_account}.blob.core.windows.net/${container}/blob?sas" ;;
      *" --query location "*) echo "${location:-westeurope}" ;;
    esac
    return 0
  fi
  az "$@"
}

# Whether a resource exists (az show succeeds); with --dry-run, never.
exists() {
  [[ "${dry_run}" -eq 0 ]] && az "$@" --output none 2>/dev/null
}

# commands.json's entries as shell variables (linux_install, windows_configFileName, ...), read in one python3 call.
eval "$(python3 - "${commands_json}" <<'PY'
import json, shlex, sys
for os_name, entries in json.load(open(sys.argv[1])).items():
    if isinstance(entries, dict):
        for key, value in entries.items():
            print(f"{os_name}_{key}={shlex.quote(value)}")
PY
)"
command_of() { local name="$1_$2"; echo "${!name:?no $2 for $1 in ${commands_json}}"; }
for os in linux windows; do
  for action in install update remove; do
    [[ "$(command_of "${os}" "${action}")" == *@BUNDLE_SHA256@* ]] ||
      die "the ${os} ${action} command in ${commands_json} does not check the bundle against @BUNDLE_SHA256@"
  done
done
# OS's ACTION command with the bundle's SHA-256 in place of @BUNDLE_SHA256@: the command checks the download with it.
command_for_bundle() {
  local command
  command="$(command_of "$1" "$2")"
  echo "${command//@BUNDLE_SHA256@/$3}"
}

bundles_dir="$(mktemp -d)"
trap 'rm -rf -- "${bundles_dir}"' EXIT
mapfile -t bundles < <(bash "${here}/bundle.sh" "${artifacts}" "${version}" "${bundles_dir}")

[[ -n "${location}" ]] || location="$(az_run group show --name "${resource_group}" --query location --output tsv)"
[[ -n "${target_regions}" ]] || target_regions="${location}"
regions_json="$(python3 -c 'import json, sys; print(json.dumps([{"name": r, "regionalReplicaCount": 1} for r in sys.argv[1].split()]))' "${target_regions}")"

if ! exists storage account show --resource-group "${resource_group}" --name "${storage_account}"; then
  az_run storage account create --resource-group "${resource_group}" --name "${storage_account}" --location "${location}" \
    --sku Standard_LRS --kind StorageV2 --allow-shared-key-access false --allow-blob-public-access false --min-tls-version TLS1_2 --output none
fi
az_run storage container create --auth-mode login --account-name "${storage_account}" --name "${container}" --output none

expiry="$(date -u -d "+${sas_days} days" '+%Y-%m-%dT%H:%MZ')"
# Uploads a file as VERSION/NAME and prints a read-only user delegation SAS URL the gallery copies it from.
upload() {
  local file="$1" blob="${version}/${1##*/}"
  az_run storage blob upload --auth-mode login --account-name "${storage_account}" --container-name "${container}" \
    --name "${blob}" --file "${file}" --overwrite --output none >&2
  az_run storage blob generate-sas --auth-mode login --as-user --account-name "${storage_account}" --container-name "${container}" \
    --name "${blob}" --permissions r --expiry "${expiry}" --https-only --full-uri --output tsv
}

config_url=""
if [[ -n "${config}" ]]; then config_url="$(upload "${config}" | tail -n 1)"; fi

if ! exists sig show --resource-group "${resource_group}" --gallery-name "${gallery}"; then
  az_run sig create --resource-group "${resource_group}" --gallery-name "${gallery}" --location "${location}" --output none
fi

for bundle in "${bundles[@]}"; do
  case "${bundle}" in
    *-vmapp-linux.tar) os=linux; os_type=Linux; app="${linux_app}" ;;
    *-vmapp-windows.zip) os=windows; os_type=Windows; app="${windows_app}" ;;
    *) die "unexpected bundle ${bundle}" ;;
  esac
  bundle_sha256="$(sha256sum -- "${bundle}" | cut -d' ' -f1)"
  package_url="$(upload "${bundle}" | tail -n 1)"
  if ! exists sig gallery-application show --resource-group "${resource_group}" --gallery-name "${gallery}" --application-name "${app}"; then
    az_run sig gallery-application create --resource-group "${resource_group}" --gallery-name "${gallery}" --application-name "${app}" \
      --os-type "${os_type}" --location "${location}" --description "sef (Scheduled Events Forwarder) agent" --output none
  fi
  version_args=(--resource-group "${resource_group}" --gallery-name "${gallery}" --application-name "${app}" --version-name "${version}"
    --location "${location}" --target-regions "${regions_json}"
    --package-file-link "${package_url}" --package-file-name "$(command_of "${os}" packageFileName)"
    --install-command "$(command_for_bundle "${os}" install "${bundle_sha256}")"
    --update-command "$(command_for_bundle "${os}" update "${bundle_sha256}")"
    --remove-command "$(command_for_bundle "${os}" remove "${bundle_sha256}")")
  if [[ "${exclude_from_latest}" == true ]]; then version_args+=(--exclude-from true); fi
  if [[ -n "${config_url}" ]]; then
    version_args+=(--default-configuration-file-link "${config_url}" --config-file-name "$(command_of "${os}" configFileName)")
  fi
  az_run sig gallery-application version create "${version_args[@]}" --output none
  echo "upload.sh: ${app} ${version}: /subscriptions/.../resourceGroups/${resource_group}/providers/Microsoft.Compute/galleries/${gallery}/applications/${app}/versions/${version}"
done
