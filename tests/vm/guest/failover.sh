#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# The failover suite (tests/vm/suites; issue 19): two RAID hosts and a client, one array, a
# host killed mid-write. docs/REMOTE.md ("Two RAID hosts in the bed") says what each step shows.
#
# usage: failover.sh IP TC DMSETUP GRAIDCTL GRAID_UBLK GRAID_NVMET SANLOCK CLIENT
#
# The bed, in one guest kernel:
#   storage hosts h1..h4  one 96 MiB namespace each over nvmet-tcp: the array's members
#   storage host h5       a 32 MiB namespace: the sanlock lease area
#   RAID host A, B        each a mount and UTS namespace of its own (host name, machine id,
#                         /run/sanlock with its own sanlock daemon, /run/lock), its own view
#                         of the members (dm-linear devices over the fabric namespaces, so
#                         one host's exclusive opens do not stand in for the lease), and a
#                         network namespace (h8 for A, h9 for B) where its nvmet port listens
#   client                the guest's root namespace: nvme-tcp to the array's export, native
#                         multipath, a writer that verifies (failover_client)
# Steps: A creates the array, writes the lease area, serves it through graid-ublk and exports
# it with graid-nvmet; the client writes; B's assemble is refused naming host 1; A is killed
# (its network cut, then kill -9 of its sanlock daemon and its server); B retries until the
# lease is its own, takes over (journal replay, resync), serves, exports the same namespace;
# the client connects the new path and goes on; then B's sanlock daemon dies while its server
# lives (the array goes foreign there): B's --on-foreign hook withdraws its export before its
# held requests fail, host A (started again) takes the array back, and the client goes on
# through A without an error; every completed write verifies; a scrub finds 0 mismatches.
# FIGURE lines give the takeover's parts and the client's pause.
set -u
export NVMF_IP=${1:?usage: failover.sh IP TC DMSETUP GRAIDCTL GRAID_UBLK GRAID_NVMET SANLOCK CLIENT}
export NVMF_TC=${2:?} NVMF_DMSETUP=${3:?}
GCTL=${4:?} UBLK=${5:?} GNVMET=${6:?} SANLOCK=${7:?} CLIENT=${8:?}
export NVMF_LIB=/vm/nvmeof-lib.sh
export NVMF_OPTS=ctrl_loss_tmo=60,reconnect_delay=1,fast_io_fail_tmo=2,keep_alive_tmo=2
. "$NVMF_LIB"
# sanlock's lease timing: io-timeout=1 s. A dead host's lease is free 8 x 1 + 60 s after its
# last renewal (docs/REMOTE.md, "The lease").
IOTO=1
# The client's path options: no fast_io_fail_tmo and a long ctrl_loss_tmo, so its I/O waits
# (requeued by multipath) while no path is live, instead of failing.
COPTS=ctrl_loss_tmo=600,reconnect_delay=2,keep_alive_tmo=2
W=/tmp/fo
mkdir -p "$W"
failed=0
t0=$(date +%s)
now() { echo $(($(date +%s) - t0)); }
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failed=1; }
log_tail() { [ -f "$1" ] && tail -n "${2:-8}" "$1" | sed 's/^/    /'; }

bed() { # a bed step that must work: otherwise the suite is skipped with the reason
	"$@" >"$W/bed.out" 2>&1 && return 0
	echo "SKIP failover-bed: '$*' failed: $(tail -n 2 "$W/bed.out" | tr '\n' ' ')"
	nvmf_teardown
	exit 77
}

# ---- storage hosts, members, lease area ----------------------------------------------------
bed nvmf_init
for k in 1 2 3 4 5; do bed nvmf_host_add $k; done
for k in 1 2 3 4; do bed nvmf_ns_add $k 1 96; done
bed nvmf_ns_add 5 1 32
for k in 1 2 3 4 5; do bed nvmf_export $k; done
for k in 1 2 3 4 5; do bed nvmf_connect $k a; done
LEASE_DEV=$(nvmf_dev 5 1)

# ---- the two RAID hosts --------------------------------------------------------------------
# sanlock runs its kill path (the library's flag-file touch) as /usr/bin/touch.
mkdir -p /etc /usr/bin /run/sanlock /run/lock /run/graid
[ -e /usr/bin/touch ] || ln -s /bin/busybox /usr/bin/touch
: >>/etc/machine-id
bed nvmf_host_add 8 # A's network namespace (its export port)
bed nvmf_host_add 9 # B's
host_up() { # host_up A|B NUMBER: the host's namespaces, held by its sanlock daemon
	local h=$1 n=$2 k
	# The library tells hosts apart by the machine id's first 16 digits (0: none).
	printf '%016x6c69626772616964\n' "$n" >"$W/machine-id-$h"
	for k in 1 2 3 4; do
		# The host's own device nodes for the members (its "path" to each namespace); a
		# host started again keeps them.
		[ -e "/dev/mapper/$h$k" ] ||
			"$NVMF_DMSETUP" create "$h$k" --table "0 $((96 * 2048)) linear $(nvmf_dev $k 1) 0" ||
			return 1
	done
	unshare -m -u sh -c "hostname raid$h && mount -t tmpfs tmpfs /run/sanlock &&
		mount -t tmpfs tmpfs /run/lock && mount -t tmpfs -o mode=0700 tmpfs /run/graid &&
		mount --bind $W/machine-id-$h /etc/machine-id &&
		exec $SANLOCK daemon -D -w 0 -l 0 -U 0 -G 0 -e raid$h" >"$W/sanlock-$h.log" 2>&1 &
	echo $! >"$W/daemon-$h.pid"
	for _ in $(seq 1 100); do
		in_host "$h" test -S /run/sanlock/sanlock.sock && return 0
		sleep 0.2
	done
	echo "sanlock daemon of $h did not start: $(tail -n 3 "$W/sanlock-$h.log")" >&2
	return 1
}
in_host() { # in_host A|B CMD...: run CMD in the host's mount and UTS namespaces
	local h=$1
	shift
	nsenter -t "$(cat "$W/daemon-$h.pid")" -m -u -- "$@"
}
members() { echo "/dev/mapper/${1}1 /dev/mapper/${1}2 /dev/mapper/${1}3 /dev/mapper/${1}4"; }
spec() { echo "sanlock:host-id=$2,io-timeout=$IOTO:$LEASE_DEV"; }
bed host_up A 1
bed host_up B 2
echo "bed ready in $(now) s: members $(for k in 1 2 3 4; do printf '%s ' "$(nvmf_dev $k 1)"; done)lease $LEASE_DEV"

# serve H NUMBER [--takeover]: graid-ublk on H's members, its device in $W/dev-H; 0 served,
# 1 refused (the server exited; its stderr in $W/ublk-H.err)
serve() {
	local h=$1 n=$2 p
	shift 2
	: >"$W/ublk-$h.out"
	# nsenter itself, not a function: $! must be the server (nsenter execs it), so that a
	# kill reaches it.
	nsenter -t "$(cat "$W/daemon-$h.pid")" -m -u -- env GRAID_LOG_LEVEL=5 "$UBLK" \
		--lease "$(spec "$h" "$n")" "$@" $(members "$h") >"$W/ublk-$h.out" 2>"$W/ublk-$h.err" &
	p=$!
	echo $p >"$W/ublk-$h.pid"
	while kill -0 $p 2>/dev/null; do
		grep -q '^/dev/ublkb' "$W/ublk-$h.out" && { head -n 1 "$W/ublk-$h.out" >"$W/dev-$h"; return 0; }
		sleep 0.2
	done
	return 1
}
status_of() { sed -n "s/.*$1 \([0-9]*\).*/\1/p" "$W/client.status" 2>/dev/null; }
# wait_writes N SECONDS: until the client has completed N writes (0) or the time is up (1)
wait_writes() {
	local i=0
	while [ $i -lt $(($2 * 5)) ]; do
		[ "$(status_of writes)" -ge "$1" ] 2>/dev/null && return 0
		kill -0 "$CLIENT_PID" 2>/dev/null || return 1
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
finish() {
	[ -f "$W/stop" ] || { : >"$W/stop"; [ -n "${CLIENT_PID:-}" ] && wait "$CLIENT_PID" 2>/dev/null; }
	for h in A B; do
		[ -f "$W/ublk-$h.pid" ] && kill "$(cat "$W/ublk-$h.pid")" 2>/dev/null
	done
	for c in $(ls /sys/class/nvme 2>/dev/null); do
		[ "$(cat "/sys/class/nvme/$c/subsysnqn" 2>/dev/null)" = "${NQN:-none}" ] &&
			echo 1 >"/sys/class/nvme/$c/delete_controller"
	done
	[ -n "${UUID:-}" ] && "$GNVMET" unexport "$UUID" 2>/dev/null
	sleep 1
	for h in A B; do
		kill -9 "$(cat "$W/daemon-$h.pid")" 2>/dev/null
		for k in 1 2 3 4; do "$NVMF_DMSETUP" remove "$h$k" 2>/dev/null; done
	done
	nvmf_teardown
	echo "failover suite: $(now) s"
	exit $failed
}

# ---- A creates, serves and exports ---------------------------------------------------------
if ! in_host A "$GCTL" create -l 5 -j $(members A) >"$W/create.out" 2>&1; then
	fail "create: graidctl create on host A failed"; log_tail "$W/create.out"; finish
fi
UUID=$(in_host A "$GCTL" status --json $(members A) | sed -n 's/.*"uuid": "\([^"]*\)".*/\1/p')
if ! in_host A "$GCTL" lease-init "$(spec A 1)" /dev/mapper/A1 >"$W/lease-init.out" 2>&1; then
	fail "lease-init: $(tail -n 1 "$W/lease-init.out")"; finish
fi
ts=$(date +%s)
if ! serve A 1; then
	fail "serve-a: graid-ublk on host A did not start"; log_tail "$W/ublk-A.err"; finish
fi
echo "FIGURE host A serving in $(($(date +%s) - ts)) s (its first open joins the lockspace)"
# export H K ADDR: graid-nvmet in host H's mount namespace (graid-ublk's record of which
# array its device serves is there) and hK's network namespace (where the port listens)
export_from() {
	nsenter -t "$(cat "$W/daemon-$1.pid")" -m -- nsenter -t "$(nvmf_pid "$2")" -n -- \
		"$GNVMET" export --host-id "$3" "$UUID" "$(cat "$W/dev-$1")" "$4"
}
NQN=$(export_from A 8 1 10.18.8.2 2>"$W/export-A.err")
if [ -z "$NQN" ]; then fail "export-a: $(cat "$W/export-A.err")"; finish; fi
pass "serve-a: host A serves $UUID as $(cat "$W/dev-A"), exported as $NQN"

# ---- the client ----------------------------------------------------------------------------
client_dev() { # the client's block device of the array: the namespace whose NGUID is its UUID
	local want b
	want=$(echo "$UUID" | tr -d '-')
	for b in /sys/block/nvme*; do
		case ${b##*/} in *c*) continue ;; esac
		[ -r "$b/nguid" ] && [ "$(tr -d '\n-' <"$b/nguid")" = "$want" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}
connect() { # connect ADDR: a live path from the client to the array's export at ADDR
	local c
	# (busybox's echo can return 0 when the kernel refused the write: look for the path)
	# (EALREADY when the client still holds a reconnecting controller of that address)
	echo "transport=tcp,traddr=$1,trsvcid=4420,nqn=$NQN,$COPTS" >/dev/nvme-fabrics 2>/dev/null
	for _ in $(seq 1 50); do
		for c in $(ls /sys/class/nvme); do
			[ "$(cat "/sys/class/nvme/$c/subsysnqn" 2>/dev/null)" = "$NQN" ] &&
				grep -q "traddr=$1," "/sys/class/nvme/$c/address" 2>/dev/null &&
				[ "$(cat "/sys/class/nvme/$c/state")" = live ] && return 0
		done
		sleep 0.2
	done
	dmesg | tail -n 5 | sed 's/^/    /'
	return 1
}
if ! connect 10.18.8.2; then fail "client-connect: cannot connect to host A's export"; finish; fi
CDEV=''
for _ in $(seq 1 50); do CDEV=$(client_dev) && break; sleep 0.2; done
if [ -z "$CDEV" ]; then fail "client-connect: no namespace with the array's NGUID"; finish; fi
"$CLIENT" "$CDEV" 4096 "$W/stop" "$W/client.status" >"$W/client.out" 2>&1 &
CLIENT_PID=$!
if ! wait_writes 300 120; then
	fail "client-writes: $(cat "$W/client.status" 2>/dev/null)"; log_tail "$W/client.out"; finish
fi
pass "client: $CDEV (NGUID = the array UUID) writing through host A: $(cat "$W/client.status")"

# ---- 1. B is refused while A lives ---------------------------------------------------------
if in_host B env GRAID_LEASE="$(spec B 2)" "$GCTL" assemble --takeover $(members B) >"$W/refused.out" 2>&1; then
	fail "b-refused: host B assembled the array while host A serves it"
elif grep -q 'held by sanlock host id 1 .*last writable owner is .* on host raidA' "$W/refused.out"; then
	pass "b-refused: host B's assemble --takeover refused while A lives: $(grep -m1 'held by' "$W/refused.out" | cut -c1-200)"
else
	fail "b-refused: refused, but not naming host A's lease"; log_tail "$W/refused.out"
fi

# ---- 2. A dies mid-write; B takes over ------------------------------------------------------
before=$(status_of writes)
t_kill=$(date +%s)
nvmf_outage 8 # A's network: its export goes silent
# The daemon first, in the same call: it never runs again, so it cannot give the server's
# lease back when the server dies (a host that dies keeps its lease until it counts as dead).
kill -9 "$(cat "$W/daemon-A.pid")" "$(cat "$W/ublk-A.pid")"
for _ in $(seq 1 50); do [ -e "/proc/$(cat "$W/ublk-A.pid")" ] || break; sleep 0.1; done
echo "host A killed at $(now) s after $before client writes"
tries=0 t_try=0
while :; do
	t_try=$(date +%s)
	tries=$((tries + 1))
	# B takes its export down before failing requests once the array is not its own (2b).
	serve B 2 --takeover --on-foreign "$GNVMET withdraw \"\$GRAID_ARRAY_UUID\"" && break
	if [ $((t_try - t_kill)) -gt 200 ]; then
		fail "takeover: host B never got the array ($tries tries)"; log_tail "$W/ublk-B.err"; finish
	fi
	grep -q 'held by sanlock host id 1' "$W/ublk-B.err" ||
		{ echo "    try $tries: $(grep -m1 'libgraid' "$W/ublk-B.err")"; }
	sleep 1
done
t_served=$(date +%s)
pass "takeover: host B serves $(cat "$W/dev-B") after $tries tries"
# A takeover with a lease reserves the members where they have persistent reservations (a
# NOTE, not a SKIP, where they have none: the bed counts a skip as a failure in CI).
if grep -q 'Write Exclusive held' "$W/ublk-B.err"; then
	pass "reservations: $(grep -m1 'Write Exclusive held' "$W/ublk-B.err" | cut -c1-160)"
else
	echo "NOTE reservations: not detected on these nvme-tcp members (Debian 6.12's nvmet answers reservation commands with EINVAL); the reserve suite shows them on SCSI disks"
fi
grep -E 'lease|takeover|journal|resync|replay' "$W/ublk-B.err" | head -n 8 | cut -c1-240 | sed 's/^/    /'
# The lease's wait is inside the open that got it (sanlock waits once A's host stops renewing).
wait_s=$(sed -n 's/.*acquired in \([0-9.]*\) s.*/\1/p' "$W/ublk-B.err" | head -n 1)
echo "FIGURE takeover: ${wait_s:-?} s waiting for the lease in the open that got it, $((t_served - t_kill)) s from host A killed to host B serving ($tries opens; sanlock io-timeout=$IOTO; the rest: the fence's 2.5 s, journal replay, resync, the device made)"
if ! export_from B 9 2 10.18.9.2 >/dev/null 2>"$W/export-B.err"; then
	fail "export-b: $(cat "$W/export-B.err")"; finish
fi
if ! connect 10.18.9.2; then fail "client-failover: cannot connect to host B's export"; finish; fi
t_path=$(date +%s)
if [ "$(client_dev)" != "$CDEV" ]; then
	fail "client-failover: the array is $(client_dev) through B, not $CDEV (another namespace)"
fi
if wait_writes $((before + 300)) 120; then
	pass "client-failover: the same $CDEV goes on through host B: $(cat "$W/client.status")"
else
	fail "client-failover: the client made no progress through B: $(cat "$W/client.status")"
	log_tail "$W/client.out"
fi
echo "FIGURE client: path to B connected $((t_path - t_kill)) s after host A was killed"

# ---- 2b. B lives but loses the array: its clients move on, they see no error ---------------
# B's sanlock daemon dies (its graid-ublk lives on): the lease is lost, the array foreign on
# B. Without --on-foreign B's server would fail the client's requests (EIO through nvmet, an
# error the client's multipath does not retry); with it B holds them, withdraws its export
# (the client's path to B goes away), then fails them where nobody hears. Host A, started
# again, takes the array back once B's host counts as dead, and the client goes on through A.
nvmf_heal 8
if ! host_up A 1 >"$W/host-a2.out" 2>&1; then
	fail "a-again: host A cannot be started again: $(tail -n 2 "$W/host-a2.out")"; finish
fi
before=$(status_of writes)
t_loss=$(date +%s)
kill -9 "$(cat "$W/daemon-B.pid")"
for _ in $(seq 1 150); do
	grep -q 'on-foreign: the hook exited' "$W/ublk-B.err" && break
	sleep 0.2
done
if grep -q 'on-foreign: the hook exited with 0' "$W/ublk-B.err"; then
	pass "b-withdraws: B lost its lease and took its export down $(($(date +%s) - t_loss)) s later: $(grep -m1 'no longer ours' "$W/ublk-B.err" | cut -c1-160)"
else
	fail "b-withdraws: no --on-foreign hook run by B"; log_tail "$W/ublk-B.err"
fi
tries=0
while :; do
	t_try=$(date +%s)
	tries=$((tries + 1))
	serve A 1 --takeover && break
	if [ $((t_try - t_loss)) -gt 200 ]; then
		fail "takeback: host A never got the array back ($tries tries)"; log_tail "$W/ublk-A.err"; finish
	fi
	sleep 1
done
pass "takeback: host A serves $(cat "$W/dev-A") again after $tries tries, $(($(date +%s) - t_loss)) s after B lost its lease"
if ! export_from A 8 1 10.18.8.2 >/dev/null 2>"$W/export-A2.err"; then
	fail "export-a2: $(cat "$W/export-A2.err")"; finish
fi
if ! connect 10.18.8.2; then fail "client-back: no live path to host A's export"; finish; fi
if wait_writes $((before + 300)) 120; then
	pass "client-back: $CDEV goes on through host A again: $(cat "$W/client.status")"
else
	fail "client-back: the client made no progress through A: $(cat "$W/client.status")"
	log_tail "$W/client.out"
fi

# ---- 3. every completed write verifies; the scrub is clean ----------------------------------
: >"$W/stop"
wait "$CLIENT_PID"
crc=$?
sed 's/^/    /' "$W/client.out" | tail -n 5
if [ $crc -eq 0 ]; then
	pass "client-verify: every completed write reads back, no I/O error: $(tail -n 1 "$W/client.out")"
else
	fail "client-verify: $(tail -n 1 "$W/client.out")"
fi
echo "FIGURE client: $(sed -n 's/.*\(longest pause [^)]*)\).*/\1/p' "$W/client.out")"
for c in $(ls /sys/class/nvme); do
	[ "$(cat "/sys/class/nvme/$c/subsysnqn" 2>/dev/null)" = "$NQN" ] &&
		echo 1 >"/sys/class/nvme/$c/delete_controller"
done
"$GNVMET" unexport "$UUID" || fail "unexport: graid-nvmet unexport failed"
for h in A B; do
	upid=$(cat "$W/ublk-$h.pid")
	kill "$upid"
	for _ in $(seq 1 150); do kill -0 "$upid" 2>/dev/null || break; sleep 0.2; done
	kill -0 "$upid" 2>/dev/null && fail "stop-$h: graid-ublk on host $h still runs 30 s after SIGTERM"
	rm -f "$W/ublk-$h.pid"
done
if in_host A env GRAID_LEASE="$(spec A 1)" "$GCTL" scrub $(members A) >"$W/scrub.out" 2>&1 &&
	grep -q ' 0 mismatches' "$W/scrub.out"; then
	pass "scrub: $(tail -n 1 "$W/scrub.out")"
else
	fail "scrub: $(tail -n 1 "$W/scrub.out")"; log_tail "$W/scrub.out"
fi
st=$(in_host A "$GCTL" status --json $(members A))
ohost=$(echo "$st" | sed -n 's/.*"owner_host": "\([^"]*\)".*/\1/p')
oepoch=$(echo "$st" | sed -n 's/.*"owner_epoch": \([0-9]*\).*/\1/p')
if [ "$ohost" = raidA ] && [ "$oepoch" = 3 ]; then
	pass "owner: the superblocks name host raidA at owner epoch 3 (A created it at 1, B took it at 2)"
else
	fail "owner: host '$ohost' epoch '$oepoch' (want raidA, 3)"
fi
finish
