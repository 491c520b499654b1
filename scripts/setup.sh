#!/bin/sh
# Installs what the build and the tests need on a fresh Debian bookworm machine
# that already has Go and gcc. Idempotent: does nothing when all is present.
set -eu
missing=""
for pkg in libopenblas-dev python3-numpy pkg-config; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $pkg"
  fi
done
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "scripts/setup.sh: installing$missing" >&2
$sudo apt-get update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y $missing
