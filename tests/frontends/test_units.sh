#!/bin/bash
# SPDX-License-Identifier: MIT
# The boot units: graid-ublk@.service (and graid-nbdkit@.service where the plugin is built)
# pass systemd-analyze verify and start their server on the members graidctl finds by UUID;
# the udev rule calls graidctl incremental; the tmpfiles.d line makes their run directory.
# usage: test_units.sh graid-ublk@.service 64-graid-incremental.rules BINDIR PATH/TO/graidctl
#        libgraid-tmpfiles.conf [graid-nbdkit@.service PATH/TO/nbdkit-graid-plugin.so]
set -u

UNIT=$(readlink -f "${1:?usage: test_units.sh UNIT RULE BINDIR GRAIDCTL TMPFILES}")
RULE=$(readlink -f "${2:?}")
BINDIR=${3:?}
G=$(readlink -f "${4:?}")
TMPFILES=$(readlink -f "${5:?}")
NBD_UNIT=${6:+$(readlink -f "$6")}
PLUGIN=${7:+$(readlink -f "$7")}
if ! command -v systemd-analyze >/dev/null; then
	# tools/bootstrap installs systemd and sets GRAID_TEST_REQUIRE_SYSTEMD=1: a fail there.
	echo "no systemd-analyze (Debian package systemd): the units cannot be verified"
	[ "${GRAID_TEST_REQUIRE_SYSTEMD:-0}" = 1 ] && exit 1
	exit 77
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/graid-units.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }

# --man=no: Documentation= names graidctl(1), which is not installed where the tests run.
# No running systemd is needed for verify (it loads the unit files offline).
verify() {
	if systemd-analyze verify --man=no "$1" >out 2>&1 && [ ! -s out ]; then
		ok "systemd-analyze verify $(basename "$1"): no complaint"
	else
		bad "systemd-analyze verify $(basename "$1")"; sed 's/^/     /' out
	fi
}
verify "$UNIT"
U=0123abcd-0000-4000-8000-00000000cafe
cp "$UNIT" "$T/graid-ublk@$U.service"
verify "$T/graid-ublk@$U.service"
# verify does complain about a bad unit (so a silent one above means something).
sed 's/^KillMode=.*/KillMode=bogus/' "$UNIT" >"$T/graid-ublk@x.service"
systemd-analyze verify --man=no "$T/graid-ublk@x.service" >out 2>&1
grep -q "KillMode\|kill mode" out && ok "verify complains about a bad KillMode" ||
	{ bad "verify let a bad KillMode through"; sed 's/^/     /' out; }

# ExecStart as systemd would run it (specifiers and $$ resolved), with the installed
# programs replaced: graidctl is the one built, graid-ublk and nbdkit print what they got.
mkdir bin && ln -s "$G" bin/graidctl
for p in graid-ublk nbdkit; do
	printf '#!/bin/sh\nprintf "%%s\\n" "$@" >%s/args\n' "$T" >bin/$p && chmod +x bin/$p
done
"$G" create -l 1 --file-size 8M m1 m0 >out 2>&1 || { cat out; echo "Bail out! create"; exit 1; }
UA=$(sed -n 's/^created RAID-1 array \([0-9a-f-]*\):.*/\1/p' out)
"$G" create -l 1 --file-size 8M o0 o1 >/dev/null 2>&1 || { echo "Bail out! create"; exit 1; }
printf 'DEVICE %s/m* %s/o*\nARRAY %s serve=ublk\n' "$T" "$T" "$UA" >graid.conf
# exec_start UNIT NAME UUID: run the unit's ExecStart for instance UUID; its args in args.
exec_start() {
	local cmd script
	cmd=$(sed -n 's/^ExecStart=//p' "$1")
	cmd=${cmd//"$BINDIR"/$T/bin}
	cmd=${cmd//%i/$3}
	cmd=${cmd//'$$'/'$'}
	if [[ "$cmd" != "/bin/sh -c '"*"' $2 $3" ]]; then
		bad "$2: ExecStart is not /bin/sh -c '...' $2 UUID: $cmd"
		return 1
	fi
	script=${cmd#/bin/sh -c \'}
	script=${script%\' $2 $3}
	rm -f args
	PATH=$T/bin:$PATH GRAID_CONF=$T/graid.conf /bin/sh -c "$script" "$2" "$3" 2>err
}
exec_start "$UNIT" graid-ublk "$UA"
[ "$(sort args 2>/dev/null | tr '\n' ' ')" = "$T/m0 $T/m1 " ] &&
	ok "graid-ublk@: ExecStart starts graid-ublk on the array's members, found by UUID" ||
	{ bad "graid-ublk got: $(cat args 2>/dev/null)"; sed 's/^/     err: /' err; }
if exec_start "$UNIT" graid-ublk 0123abcd-0000-4000-8000-000000000000; then
	bad "graid-ublk@: ExecStart for an array not found succeeded"
else
	[ ! -e args ] && grep -q "no member of array" err &&
		ok "graid-ublk@: an array not found fails the start, graid-ublk not run" ||
		bad "an array not found: $(cat err)"
fi

# The run directory the servers' control sockets go in: /run/graid, 0700, root's, made
# (or put right) by systemd-tmpfiles at boot.
if [ "$(id -u)" -ne 0 ]; then
	echo "# not root: systemd-tmpfiles cannot make root's directory; the tmpfiles line not run"
else
	mkdir -p "$T/root/run"
	if systemd-tmpfiles --create --root="$T/root" "$TMPFILES" >out 2>&1 &&
		[ "$(stat -c '%F %a %U' "$T/root/run/graid")" = "directory 700 root" ]; then
		ok "tmpfiles: /run/graid made, 0700, root's"
	else
		bad "tmpfiles: /run/graid: $(stat -c '%F %a %U' "$T/root/run/graid" 2>&1)"
		sed 's/^/     /' out
	fi
	chmod 0777 "$T/root/run/graid"
	systemd-tmpfiles --create --root="$T/root" "$TMPFILES" >out 2>&1
	[ "$(stat -c %a "$T/root/run/graid")" = 700 ] &&
		ok "tmpfiles: a /run/graid others could write is closed again (0700)" ||
		{ bad "tmpfiles: left $(stat -c %a "$T/root/run/graid")"; sed 's/^/     /' out; }
fi

if [ -n "$NBD_UNIT" ]; then
	verify "$NBD_UNIT"
	cp "$NBD_UNIT" "$T/graid-nbdkit@$U.service"
	verify "$T/graid-nbdkit@$U.service"
	exec_start "$NBD_UNIT" graid-nbdkit "$UA"
	want="-P /run/graid-nbdkit/$UA/nbdkit.pid -U /run/graid-nbdkit/$UA/nbd.sock "
	want+="$(sed -n 's/^ExecStart=.* \([^ ]*nbdkit-graid-plugin.so\) .*/\1/p' "$NBD_UNIT") "
	want+="member=$T/m0 member=$T/m1 "
	[ "$(tr '\n' ' ' <args 2>/dev/null)" = "$want" ] &&
		ok "graid-nbdkit@: nbdkit gets its pidfile, socket, the plugin and member=PATH each" ||
		{ bad "nbdkit got: $(tr '\n' ' ' <args 2>/dev/null), wanted $want"; sed 's/^/     err: /' err; }
	grep -q "^PIDFile=/run/graid-nbdkit/%i/nbdkit.pid$" "$NBD_UNIT" &&
		grep -q "^RuntimeDirectory=graid-nbdkit/%i$" "$NBD_UNIT" &&
		ok "graid-nbdkit@: the pidfile it passes is the unit's PIDFile, in its RuntimeDirectory" ||
		bad "graid-nbdkit@: PIDFile/RuntimeDirectory"
else
	echo "# no nbdkit plugin built: graid-nbdkit@.service not tested"
fi

# The nbdkit unit's ExecStart for real (its run directory moved here, the plugin the one
# built): ready when it returns, the array held by the server; SIGTERM closes it clean.
if [ -n "${GRAID_SANITIZED:-}" ]; then
	echo "# sanitizer build: nbdkit cannot load an ASan-instrumented plugin: graid-nbdkit@ not run"
elif [ -n "$NBD_UNIT" ] && [ -n "$PLUGIN" ] && command -v nbdkit >/dev/null; then
	cmd=$(sed -n 's/^ExecStart=//p' "$NBD_UNIT")
	cmd=${cmd//"$BINDIR"/$T/bin}
	cmd=${cmd//\/run\/graid-nbdkit/$T/rt}
	cmd=$(printf '%s' "$cmd" | sed "s|[^ \"]*/nbdkit-graid-plugin.so|$PLUGIN|")
	cmd=${cmd//%i/$UA}
	cmd=${cmd//'$$'/'$'}
	script=${cmd#/bin/sh -c \'}
	script=${script%\' graid-nbdkit $UA}
	mkdir -p "$T/rt/$UA"
	if GRAID_CONF=$T/graid.conf GRAID_RUN_DIR=$T/run /bin/sh -c "$script" graid-nbdkit "$UA" \
		>out 2>err; then
		pid=$(cat "$T/rt/$UA/nbdkit.pid" 2>/dev/null)
		[ -S "$T/rt/$UA/nbd.sock" ] && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
			ok "graid-nbdkit@: ExecStart returns with the server up (pidfile, socket)" ||
			bad "graid-nbdkit@: no server after ExecStart (pid '$pid')"
		[ -S "$T/run/$UA.ctl" ] &&
			ok "graid-nbdkit@: the server serves the array's control endpoint" ||
			bad "graid-nbdkit@: no control socket $T/run/$UA.ctl"
		"$G" status m0 m1 >out 2>&1
		grep -q "nbdkit" out && ok "graid-nbdkit@: the array is held by nbdkit" ||
			{ bad "graid-nbdkit@: status does not name nbdkit"; sed 's/^/     /' out; }
		[ -n "$pid" ] && kill -TERM "$pid"
		for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		"$G" status m0 m1 >out 2>&1 && ! grep -q "nbdkit" out &&
			ok "graid-nbdkit@: SIGTERM (the unit's stop) leaves the array clean and free" ||
			{ bad "graid-nbdkit@: after SIGTERM"; sed 's/^/     /' out; }
	else
		bad "graid-nbdkit@: ExecStart with nbdkit failed"; sed 's/^/     err: /' err
	fi
else
	echo "# no nbdkit or plugin: graid-nbdkit@.service not run"
fi

# The rule hands block devices blkid does not claim to graidctl incremental.
grep -Eq "^RUN\+=\"$BINDIR/graidctl incremental \\\$devnode\"" "$RULE" &&
	ok "the udev rule runs $BINDIR/graidctl incremental \$devnode" || bad "the rule's RUN"
grep -Eq '^ENV\{ID_FS_TYPE\}=="\?\*", GOTO="graid_end"' "$RULE" &&
	ok "the rule skips devices blkid claims" || bad "the rule does not skip blkid's devices"

echo "# $pass passed, $fail failed"
[ "$fail" -eq 0 ]
