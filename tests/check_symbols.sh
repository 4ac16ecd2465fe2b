#!/bin/sh
# SPDX-License-Identifier: MIT
# Every symbol libgraid.so exports is declared in a public header, and nothing else leaks;
# every GRAID_API function of the headers is exported (lib/libgraid.map lists each by name).
set -eu
lib=$1
incdir=$2
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ { sub(/@.*/, "", $3); print $3 }')
[ -n "$syms" ] || { echo "no exported symbols in $lib"; exit 1; }
fail=0
for s in $syms; do
	case $s in
	graid_*) ;;
	*) echo "exported symbol without the graid_ prefix: $s"; fail=1; continue ;;
	esac
	if ! grep -qw "$s" "$incdir"/*.h; then
		echo "exported but not declared in a public header: $s"
		fail=1
	fi
done
for s in $(grep -ho 'GRAID_API[^(]*(' "$incdir"/*.h | grep -o 'graid_[a-z0-9_]*' | sort -u); do
	if ! echo "$syms" | grep -qx "$s"; then
		echo "declared GRAID_API but not exported (add it to lib/libgraid.map): $s"
		fail=1
	fi
done
n=$(echo "$syms" | wc -w)
[ $fail -eq 0 ] && echo "$n exported symbols, all declared in public headers"
exit $fail
