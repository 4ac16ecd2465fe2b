#!/bin/sh
# SPDX-License-Identifier: MIT
# The built library's ABI (its exported functions and the public types they reach) is the
# committed baseline's: abidiff fails on any change not announced by a new baseline
# (docs/ABI.md).
set -u
lib=$1
incdir=$2
baseline=$3
if ! command -v abidiff >/dev/null; then
	echo "abidiff not installed (Debian package abigail-tools; tools/bootstrap installs it)"
	[ "${GRAID_TEST_REQUIRE_ABI:-0}" = 1 ] && exit 1
	exit 77
fi
# Types come from DWARF: a build without debug information has none to compare.
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
	echo "$lib has no debug information (a release build): nothing to compare"
	[ "${GRAID_TEST_REQUIRE_ABI:-0}" = 1 ] && exit 1
	exit 77
fi
if abidiff --drop-private-types --hd2 "$incdir" "$baseline" "$lib"; then
	echo "ABI as in $baseline"
	exit 0
fi
echo "the ABI differs from $baseline: if the change is meant, regenerate the baseline in the"
echo "same commit and say so in its message (docs/ABI.md)"
exit 1
