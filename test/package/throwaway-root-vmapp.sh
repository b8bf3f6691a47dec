#!/usr/bin/env bash
# Runs the sef VM Application's install, update and remove commands (infra/vmapp/commands.json) on a throwaway root as
# Azure's VM Application agent runs them, for test/package/vmapp.test.ts: as root, in a new network namespace with no
# interface up (no network), from .../VMApplicationManagerLinux/<application>/<version>/ holding the package and the
# configuration under the names the agent gives them. The root is an overlay over this machine's Debian (as in
# throwaway-root.sh); with FAMILY=rpm it is made an RPM system: an os-release of Azure Linux, in the rpm database a
# base package providing what sef's .rpm requires, and dnf with a repository it cannot reach (no network). One
# "ok: ..." line per check; exits non-zero at the first failure.
# The commands and file names come in the environment: VMAPP_INSTALL, VMAPP_UPDATE, VMAPP_REMOVE,
# VMAPP_PACKAGE_FILE_NAME, VMAPP_CONFIG_FILE_NAME (infra/vmapp/commands.json's "linux" entry).
# Usage: throwaway-root-vmapp.sh SCRATCH_DIR deb|rpm OLDER_BUNDLE BUNDLE [BASE_RPM]
set -euo pipefail

scratch="$1"
family="$2"
older_bundle="$3"
bundle="$4"
base_rpm="${5:-}"
root="${scratch}/root"
mkdir -p "${scratch}/upper" "${scratch}/work" "${root}"
mount -t overlay overlay -o "lowerdir=/,upperdir=${scratch}/upper,workdir=${scratch}/work" "${root}"
mount -t proc proc "${root}/proc"
mount --bind /dev "${root}/dev" # a VM has its devices (/dev/null, /dev/fd)
fail() { echo "FAIL: $*" >&2; exit 1; }
command_of() {
  case "$1" in
    install) echo "${VMAPP_INSTALL:?}" ;;
    update) echo "${VMAPP_UPDATE:?}" ;;
    remove) echo "${VMAPP_REMOVE:?}" ;;
  esac
}
version_of() { chroot "${root}" /usr/bin/sef --version; }

# A clean root: no sef, no sef user.
chroot "${root}" dpkg --purge sef >/dev/null 2>&1 || true
chroot "${root}" userdel sef >/dev/null 2>&1 || true
if [[ "${family}" == rpm ]]; then
  printf 'NAME="Microsoft Azure Linux"\nID=azurelinux\nVERSION_ID="3.0"\n' >"${root}/etc/os-release"
  cp "${base_rpm}" "${root}/tmp/base.rpm"
  chroot "${root}" rpm -i /tmp/base.rpm >"${scratch}/base-rpm.log" 2>&1 || { cat "${scratch}/base-rpm.log" >&2; fail "installing the base rpm"; }
  # The distribution's repository, unreachable from the VM, and dnf configured as RHEL and Azure Linux ship it
  # (skip_if_unavailable=False; Debian's dnf skips): whatever loads repository metadata fails.
  mkdir -p "${root}/etc/yum.repos.d" "${root}/etc/dnf"
  printf '[main]\ngpgcheck=True\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=True\nskip_if_unavailable=False\n' >"${root}/etc/dnf/dnf.conf"
  printf '[azurelinux-base]\nname=base\nbaseurl=http://192.0.2.1/azurelinux/3.0/base/\nenabled=1\ngpgcheck=0\n' >"${root}/etc/yum.repos.d/azurelinux.repo"
  chroot "${root}" sh -c "command -v dnf" >/dev/null || fail "no dnf in the RPM root (npm test's set-up step installs it)"
fi

agent_dir=/var/lib/waagent/Microsoft.CPlat.Core.VMApplicationManagerLinux/sef-linux
# Puts a version's package (and config, when given) where the agent downloads them. NAMING "default": the package as
# the application's name, the config as <application>_config (Azure's REST API's default name; vmapp-scripts.test.ts
# checks <application>-config too); "settings": packageFileName and configFileName.
stage_version() {
  local package="$2" naming="$3" config="${4:-}" dir="${root}${agent_dir}/$1"
  mkdir -p "${dir}"
  # The version's commands carry its bundle's SHA-256, as the publisher (upload.sh, vmapp.bicep) writes them.
  sha256sum -- "${package}" | cut -d' ' -f1 >"${scratch}/$1.sha256"
  if [[ "${naming}" == default ]]; then
    cp "${package}" "${dir}/sef-linux"
    if [[ -n "${config}" ]]; then cp "${config}" "${dir}/sef-linux_config"; fi
  else
    cp "${package}" "${dir}/${VMAPP_PACKAGE_FILE_NAME:?}"
    if [[ -n "${config}" ]]; then cp "${config}" "${dir}/${VMAPP_CONFIG_FILE_NAME:?}"; fi
  fi
}
# Runs ACTION's command of VERSION as the agent does: /bin/bash -c, as root, from the version's directory, a clean
# environment, no network.
run_action() {
  local version="$1" action="$2" log="${scratch}/$1-$2.log" command
  command="$(command_of "${action}")"
  command="${command//@BUNDLE_SHA256@/$(cat "${scratch}/${version}.sha256")}"
  unshare --net -- chroot "${root}" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    /bin/bash -c "cd '${agent_dir}/${version}' && ${command}" >"${log}" 2>&1
}
expect_action() {
  local code=0
  run_action "$1" "$2" || code=$?
  if [[ "${code}" -ne 0 ]]; then
    cat "${scratch}/$1-$2.log" >&2
    fail "$2 of $1 exited ${code}"
  fi
}

printf '{"sinks":["jsonl:/var/lib/sef/records.jsonl"],"dataDir":"/var/lib/sef","logLevel":"warn","metrics":{"enabled":false}}\n' >"${scratch}/config-a.json"
stage_version 0.0.1 "${older_bundle}" default "${scratch}/config-a.json"
stage_version 0.1.0 "${bundle}" settings
grep -q "\.${family}$" <<<"$(tar -tf "${older_bundle}")" || fail "the older bundle has no .${family}"

# 1. Install the older version: the package manager chosen is this root's, the config is the VM Application's.
expect_action 0.0.1 install
grep -q "(${family}, x86_64)" "${scratch}/0.0.1-install.log" || fail "install did not choose the .${family}: $(head -3 "${scratch}/0.0.1-install.log")"
[[ "$(version_of)" == 0.0.1 ]] || fail "install left sef --version at $(version_of)"
cmp -s "${root}/etc/sef/config.json" "${scratch}/config-a.json" || fail "install did not put the VM Application's config in place"
[[ "$(chroot "${root}" stat -c '%a %U %G' /etc/sef/config.json)" == "640 root sef" ]] || fail "config.json is $(chroot "${root}" stat -c '%a %U %G' /etc/sef/config.json)"
echo "ok: install of 0.0.1 (${family}, package and config under the application's name) with its config, 0640 root:sef"

# The agent's state, as the service makes it.
chroot "${root}" install -d -o sef -g sef -m 0750 /var/lib/sef
echo marker >"${root}/var/lib/sef/marker"

# 2. Update to this version (packageFileName/configFileName naming, no config): data and config stay.
expect_action 0.1.0 update
[[ "$(version_of)" != 0.0.1 ]] || fail "update left sef at 0.0.1"
[[ -f "${root}/var/lib/sef/marker" ]] || fail "update lost /var/lib/sef"
cmp -s "${root}/etc/sef/config.json" "${scratch}/config-a.json" || fail "update replaced the config"
echo "ok: update to $(version_of) keeps /var/lib/sef and the config"

# 3. Rollback: the previous version's update command (the policy pins the previous version).
new_version="$(version_of)"
expect_action 0.0.1 update
[[ "$(version_of)" == 0.0.1 ]] || fail "rollback left sef at $(version_of)"
[[ -f "${root}/var/lib/sef/marker" ]] || fail "rollback lost /var/lib/sef"
cmp -s "${root}/etc/sef/config.json" "${scratch}/config-a.json" || fail "rollback replaced the config"
echo "ok: rollback from ${new_version} to 0.0.1 keeps /var/lib/sef and the config"

# 4. Remove, then install again: data and config stay.
expect_action 0.0.1 remove
[[ ! -e "${root}/usr/bin/sef" ]] || fail "remove left /usr/bin/sef"
[[ -f "${root}/var/lib/sef/marker" ]] || fail "remove lost /var/lib/sef"
cmp -s "${root}/etc/sef/config.json" "${scratch}/config-a.json" || fail "remove did not keep the config"
echo "ok: remove keeps /var/lib/sef and the config"
expect_action 0.1.0 install
[[ "$(version_of)" == "${new_version}" ]] || fail "reinstall left sef at $(version_of)"
[[ -f "${root}/var/lib/sef/marker" ]] || fail "reinstall lost /var/lib/sef"
cmp -s "${root}/etc/sef/config.json" "${scratch}/config-a.json" || fail "reinstall replaced the config"
echo "ok: remove then install again keeps /var/lib/sef and the config: ${new_version}"

# 5. A broken config fails the install (the agent reports the exit code) and leaves the working config.
printf '{"sinks":' >"${root}${agent_dir}/0.1.0/${VMAPP_CONFIG_FILE_NAME}"
if run_action 0.1.0 install; then fail "install accepted a broken config"; fi
cmp -s "${root}/etc/sef/config.json" "${scratch}/config-a.json" || fail "a broken config replaced the working one"
echo "ok: a broken config fails the install: $(grep -m1 FAILED "${scratch}/0.1.0-install.log")"

# 6. A bundle whose package does not have its SHA256SUMS hash is refused, and nothing is installed.
mkdir -p "${scratch}/tampered"
tar -xf "${bundle}" -C "${scratch}/tampered"
sed -i -E 's/^[0-9a-f]{64}/0000000000000000000000000000000000000000000000000000000000000000/' "${scratch}/tampered/SHA256SUMS"
tar -cf "${scratch}/tampered.tar" -C "${scratch}/tampered" .
stage_version 0.2.0 "${scratch}/tampered.tar" settings
before_tampered="$(version_of)"
if run_action 0.2.0 update; then fail "update installed a package whose SHA-256 is not its SHA256SUMS one"; fi
grep -q "refusing to install it" "${scratch}/0.2.0-update.log" || fail "the refusal does not say why: $(tail -2 "${scratch}/0.2.0-update.log")"
[[ "$(version_of)" == "${before_tampered}" ]] || fail "a refused update changed sef to $(version_of)"
echo "ok: a package that does not match SHA256SUMS is refused: $(grep -m1 FAILED "${scratch}/0.2.0-update.log")"

# 6b. A bundle swapped after publishing (the version's commands carry the published bundle's SHA-256) is refused
# before anything of it runs.
stage_version 0.3.0 "${bundle}" settings
cp "${older_bundle}" "${root}${agent_dir}/0.3.0/${VMAPP_PACKAGE_FILE_NAME}"
before_swapped="$(version_of)"
if run_action 0.3.0 update; then fail "update installed a bundle whose SHA-256 is not the published one"; fi
grep -q "is not the published bundle" "${scratch}/0.3.0-update.log" || fail "the refusal does not say why: $(tail -2 "${scratch}/0.3.0-update.log")"
[[ ! -e "${root}${agent_dir}/0.3.0/bundle" ]] || fail "a refused bundle was unpacked"
[[ "$(version_of)" == "${before_swapped}" ]] || fail "a refused update changed sef to $(version_of)"
echo "ok: a bundle swapped after publishing is refused: $(head -1 "${scratch}/0.3.0-update.log")"

# 7. Remove when sef is already gone succeeds (the agent may run it twice).
expect_action 0.1.0 remove
expect_action 0.1.0 remove
grep -q "nothing to remove" "${scratch}/0.1.0-remove.log" || fail "a second remove did not say there was nothing to remove"
echo "ok: remove twice: $(tail -1 "${scratch}/0.1.0-remove.log")"
