#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/check-layers fails on tests/layers_fixture, naming each of its three upward includes
# and nothing it must accept.
set -eu
tool=$1
fixture=$2
rc=0
out=$(python3 "$tool" "$fixture") || rc=$?
echo "$out"
fail=0
if [ "$rc" -ne 1 ]; then
	echo "check-layers exited $rc on the fixture, not 1"
	fail=1
fi
for want in \
	'lib/core/meta/by_relative_path.c: includes "../api/api_thing.h": layer api is above meta' \
	'lib/core/meta/by_angle_brackets.c: includes <api/api_thing.h>: layer api is above meta' \
	'lib/backends/isal/engine_up.c: includes "meta/meta_thing.h": layer meta is above engine'
do
	if ! printf '%s\n' "$out" | grep -qxF "$want"; then
		echo "not reported: $want"
		fail=1
	fi
done
# The fixture's other includes are allowed: exactly the three above are problems.
if ! printf '%s\n' "$out" | grep -qxF 'check-layers: 3 problem(s)'; then
	echo "expected exactly 3 problems"
	fail=1
fi
exit $fail
