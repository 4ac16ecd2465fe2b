#!/bin/bash
# SPDX-License-Identifier: MIT
# graid-nvmet against a stand-in for nvmet's configfs tree (GRAID_NVMET_CONFIGFS): the names it
# derives from the array UUID, a second export re-pointing the same namespace (what a takeover
# host does), ports reused and removed, refusals that change nothing. The kernel's nvmet itself
# is exercised in the VM bed (tests/vm, suite failover); this machine's kernel has no nvmet.
#
# usage: test_graid_nvmet.sh GRAID_NVMET
set -u
tool=${1:?usage: test_graid_nvmet.sh GRAID_NVMET}
t=$(mktemp -d /tmp/graid-nvmet-test.XXXXXX) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/cfg/nvmet/subsystems" "$t/cfg/nvmet/ports" "$t/cfg/nvmet/hosts"
export GRAID_NVMET_CONFIGFS=$t/cfg
# What configfs does that a plain directory does not, as shims on PATH (only under $t): an
# item made gets its default groups (a subsystem namespaces/ and allowed_hosts/, a port
# subsystems/ and referrals/), and an item removed takes its attribute files with it.
mkdir "$t/bin"
cat >"$t/bin/mkdir" <<'SHIM'
#!/bin/sh
/bin/mkdir "$@" || exit
for d; do
	case $d in
	*/nvmet/subsystems/*/namespaces/* | */nvmet/subsystems/*/allowed_hosts/*) ;;
	*/nvmet/subsystems/*) /bin/mkdir "$d/namespaces" "$d/allowed_hosts" ;;
	*/nvmet/ports/*/*) ;;
	*/nvmet/ports/*) /bin/mkdir "$d/subsystems" "$d/referrals" ;;
	esac
done
SHIM
cat >"$t/bin/rmdir" <<'SHIM'
#!/bin/sh
for d; do
	find "$d" -maxdepth 1 -type f -delete
	for g in namespaces allowed_hosts subsystems referrals; do /bin/rmdir "$d/$g" 2>/dev/null; done
done
exec /bin/rmdir "$@"
SHIM
chmod +x "$t/bin/mkdir" "$t/bin/rmdir"
export PATH=$t/bin:$PATH
N=$t/cfg/nvmet
fails=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
truncate -s 1M "$t/devA" "$t/devB"
U=6c696267-7261-6964-0000-00000000002a
NQN=nqn.2026-12.io.libgraid:array:$U

out=$("$tool" export "$U" "$t/devA" 10.0.0.1 2>&1)
sub=$N/subsystems/$NQN
if [ "$out" = "$NQN" ] && [ -d "$sub/namespaces/1" ] &&
	[ "$(cat "$sub/namespaces/1/device_nguid")" = "$U" ] &&
	[ "$(cat "$sub/namespaces/1/device_uuid")" = "$U" ] &&
	[ "$(cat "$sub/namespaces/1/device_path")" = "$t/devA" ] &&
	[ "$(cat "$sub/namespaces/1/enable")" = 1 ] &&
	[ "$(cat "$sub/attr_serial")" = 6c696267726169640000 ] &&
	[ "$(cat "$sub/attr_allow_any_host")" = 1 ] &&
	[ "$(cat "$sub/attr_cntlid_min")" = 4096 ] && [ "$(cat "$sub/attr_cntlid_max")" = 8191 ] &&
	[ "$(cat "$N/ports/1/addr_traddr")" = 10.0.0.1 ] && [ "$(cat "$N/ports/1/addr_trsvcid")" = 4420 ] &&
	[ "$(cat "$N/ports/1/addr_trtype")" = tcp ] && [ "$(cat "$N/ports/1/addr_adrfam")" = ipv4 ] &&
	[ "$(readlink "$N/ports/1/subsystems/$NQN")" = "$sub" ]; then
	ok export_names_the_subsystem_and_namespace_after_the_array
else
	bad export_names_the_subsystem_and_namespace_after_the_array "out '$out'; $(find "$N" | head -n 20 | tr '\n' ' ')"
fi

# The same UUID in upper case without dashes is the same array.
out=$("$tool" nqn "$(echo "$U" | tr -d - | tr a-f A-F)")
[ "$out" = "$NQN" ] && ok the_uuid_is_read_with_or_without_dashes ||
	bad the_uuid_is_read_with_or_without_dashes "'$out'"

# Another host serving the array after a takeover: the same namespace, the new device, a second
# port; the NGUID is untouched.
out=$("$tool" export --host-id 2 --svcid 4421 "$U" "$t/devB" 10.0.0.2 2>&1)
if [ "$out" = "$NQN" ] && [ "$(cat "$sub/namespaces/1/device_path")" = "$t/devB" ] &&
	[ "$(cat "$sub/namespaces/1/enable")" = 1 ] &&
	[ "$(cat "$sub/namespaces/1/device_nguid")" = "$U" ] &&
	[ "$(cat "$sub/attr_cntlid_min")" = 8192 ] && [ "$(cat "$sub/attr_cntlid_max")" = 12287 ] &&
	[ "$(cat "$N/ports/2/addr_traddr")" = 10.0.0.2 ] && [ "$(cat "$N/ports/2/addr_trsvcid")" = 4421 ] &&
	[ -L "$N/ports/2/subsystems/$NQN" ] && [ -L "$N/ports/1/subsystems/$NQN" ]; then
	ok a_second_export_repoints_the_same_namespace
else
	bad a_second_export_repoints_the_same_namespace "out '$out'; path $(cat "$sub/namespaces/1/device_path")"
fi

# An existing port on the same address is reused, not duplicated.
"$tool" export "$U" "$t/devB" 10.0.0.1 >/dev/null 2>&1
[ ! -e "$N/ports/3" ] && ok an_existing_port_is_reused || bad an_existing_port_is_reused "port 3 made"

# Refusals: each names what is wrong, exits 2 (usage) or 1, and changes nothing.
before=$(cd "$N" && find . -printf '%p %l\n' | sort; cat "$sub/namespaces/1/device_path")
check_refused() { # NAME WANT_RC WANT_TEXT ARGS...
	local name=$1 want=$2 text=$3 rc
	shift 3
	msg=$("$tool" "$@" 2>&1 >/dev/null)
	rc=$?
	after=$(cd "$N" && find . -printf '%p %l\n' | sort; cat "$sub/namespaces/1/device_path")
	if [ $rc -eq "$want" ] && echo "$msg" | grep -q -- "$text" && [ "$after" = "$before" ]; then
		ok "$name"
	else
		bad "$name" "rc $rc (want $want), message '$msg'"
	fi
}
check_refused a_bad_uuid_is_refused 2 "'not-a-uuid' is not an array UUID" export not-a-uuid "$t/devA" 10.0.0.1
check_refused a_missing_device_is_refused 1 "$t/nothing is neither" export "$U" "$t/nothing" 10.0.0.1
check_refused a_bad_transport_is_refused 2 "--trtype: tcp or rdma, not 'udp'" export --trtype udp "$U" "$t/devA" 10.0.0.1
check_refused a_bad_port_number_is_refused 2 "--svcid: a port number, not 'x1'" export --svcid x1 "$U" "$t/devA" 10.0.0.1
check_refused a_host_id_out_of_range_is_refused 2 "--host-id: 1..15, not '16'" export --host-id 16 "$U" "$t/devA" 10.0.0.1
check_refused too_few_arguments_are_refused 2 "export needs UUID DEVICE ADDR" export "$U" "$t/devA"
check_refused an_unknown_array_is_not_unexported 1 "no subsystem" unexport 6c696267-7261-6964-0000-000000000000

# Allowed hosts: only those named.
"$tool" export --host nqn.2014-08.org.example:host-a "$U" "$t/devB" 10.0.0.1 >/dev/null 2>&1
[ "$(cat "$sub/attr_allow_any_host")" = 0 ] && [ -L "$sub/allowed_hosts/nqn.2014-08.org.example:host-a" ] &&
	ok host_nqns_restrict_who_connects || bad host_nqns_restrict_who_connects "$(ls "$sub/allowed_hosts")"

# unexport removes the subsystem and the ports it leaves empty; another subsystem's port stays.
mkdir "$N/subsystems/other" "$N/ports/9"
ln -s "$N/subsystems/other" "$N/ports/1/subsystems/other"
"$tool" unexport "$U" 2>&1
if [ ! -e "$sub" ] && [ -d "$N/ports/1" ] && [ ! -e "$N/ports/1/subsystems/$NQN" ] &&
	[ ! -e "$N/ports/2" ] && [ -d "$N/ports/9" ]; then
	ok unexport_removes_the_subsystem_and_its_empty_ports
else
	bad unexport_removes_the_subsystem_and_its_empty_ports "$(find "$N" | tr '\n' ' ')"
fi
echo "graid-nvmet: $fails failed"
[ $fails -eq 0 ]
