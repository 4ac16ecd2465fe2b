#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Without a usable GPU, the CUDA probe says why, and what shows it passes the words on: the
# plugin test's SKIP line and `graidctl backends`. With no driver at all, the static runtime's
# "insufficient driver" and no driver version; with the stand-in libcuda.so.1 found only
# through LD_LIBRARY_PATH, the stand-in's version (13.1) and its "no device".
# Usage: probe-reason.sh CUDA_PLUGIN_TEST PLUGIN.so STANDIN_DIR GRAIDCTL
set -uo pipefail
ptest=$1 plugin=$2 standin=$3 graidctl=$4
fail=0
check() { # check WHAT OUTPUT ERE
	if grep -qE "$3" <<<"$2"; then
		echo "ok: $1"
	else
		echo "FAIL: $1: want /$3/ in:"
		sed 's/^/  | /' <<<"$2"
		fail=1
	fi
}

# A machine whose loader finds a driver by itself: the no-driver words cannot be shown.
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	echo "note: this machine's loader finds a libcuda.so.1; the no-driver case is not tried"
else
	out=$(env -u LD_LIBRARY_PATH "$ptest" "$plugin" 2>&1)
	check "no driver: the plugin test says why it skips" "$out" \
		'^SKIP: .*probe returned -19: cudaErrorInsufficientDriver \(no driver loaded, runtime [0-9]+\.[0-9]+\)'
fi
# LD_LIBRARY_PATH is searched before the cache: the stand-in wins even where a driver exists.
out=$(LD_LIBRARY_PATH=$standin "$ptest" "$plugin" 2>&1)
check "stand-in driver: the plugin test names its error and version" "$out" \
	'^SKIP: .*probe returned -19: cudaErrorNoDevice \(driver 13\.1, runtime [0-9]+\.[0-9]+\): no CUDA-capable device'
out=$(LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	GRAID_BACKEND_PATH=$(dirname "$plugin") "$graidctl" backends --no-measure 2>&1)
check "stand-in driver: graidctl backends shows the probe's reason" "$out" \
	'^cuda +absent +- +cudaErrorNoDevice \(driver 13\.1, runtime [0-9]+\.[0-9]+\)'
exit $fail
