#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package of idemgate (CPack's DEB generator, packaging/CMakeLists.txt) from
# the Release build in $BUILD_DIR (default build/, configured for /usr) and prints its path:
#   build/idemgate_<version>_amd64.deb
# Install it with `apt install ./build/idemgate_<version>_amd64.deb`; scripts/package-check.sh
# installs it into a fresh Debian 12 root, runs it and purges it.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DCMAKE_INSTALL_PREFIX=/usr \
  -DIDEMGATE_TEST_BACKEND=OFF >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}" --target idemgate idemgate-loadtest man_pages debian_changelog
(cd "$build_dir" && cpack -G DEB >/dev/null)
version=$(sed -n 's/^project(idemgate VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb="$build_dir/idemgate_${version}_$(dpkg --print-architecture).deb"
[[ -f $deb ]] || { echo "package: $deb was not made" >&2; exit 1; }
echo "$deb"
