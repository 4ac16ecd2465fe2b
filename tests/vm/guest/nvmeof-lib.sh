#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# NVMe over TCP "storage hosts" inside the test guest (the nvmeof suite; tests/vm/README.md).
#
# A storage host is a network namespace (held open by a sleeping process) joined to the
# guest's root namespace — the RAID host — by a veth pair, exporting memory-backed null_blk
# devices through the kernel's nvmet-tcp. The RAID host connects with nvme-tcp. Nothing here
# knows about libgraid: the suite's program (nvmeof_vm) calls these helpers to break things.
#
# Sourced by guest/nvmeof.sh, or run as "sh nvmeof-lib.sh COMMAND ARGS" (the program's
# system() calls). Needs NVMF_IP, NVMF_TC and NVMF_DMSETUP: the packed host binaries.
#
# Host K (1..9) is named hK: veth vhK (root, 10.18.K.1) -- vtK (hK, 10.18.K.2), nvmet port K
# on 10.18.K.2:4420, subsystem nqn.2026-12.io.libgraid:hK. A second path (nvmf_path_add):
# vhKb -- vtKb, 10.19.K.0/24, port 100+K, same subsystem: native NVMe multipath joins them.
# Namespace N of hK: null_blk "nbhK_N" under dm "dmhK_N" (linear; a media error swaps in a
# dm-flakey segment), NGUID 6c696267726169640000000K0000000N, UUID of the same digits.
#
# Commands (each prints what it made, fails with a message on stderr):
#   init                          mount configfs, loopback up, state dir /run/nvmf
#   host_add K                    the namespace, veth pair and nvmet port of hK
#   path_add K                    a second veth pair and port into hK (multipath)
#   ns_add K N MB                 namespace N of hK (MB MiB, 4096-byte blocks)
#   export K                      link hK's subsystem into its ports (from inside hK)
#   connect K [PATH] [opt=v,...]  connect the RAID host to hK (PATH a|b), prints "nvmeX"
#   dev K N                       the RAID host's block device of namespace N of hK
#   nguid K N | uuid K N | nqn K  its identity
#   ctrls K                       the RAID host's controllers of hK ("nvme3 nvme5")
#   state K                       "nvme3=live nvme5=connecting"
#   outage K [PATH]               100% netem loss on both ends of hK's veth(s): silent
#   heal K [PATH]                 remove it
#   unlink K / link K             take the subsystem off hK's ports (nvmet drops its
#                                 controllers at once: connection reset) / put it back
#   disconnect K                  delete the RAID host's controllers of hK
#   media_error K N SECTOR COUNT [keep]  reads of those 512-byte sectors fail (EIO,
#                                 controller live), writes pass; the data under them is
#                                 overwritten (a lost block: only a rewrite from parity can
#                                 heal it), unless "keep" (a probe: does a read hit them?)
#   media_clear K N               the plain linear table again (the drive remapped)
#   badblocks K N +A-B|-A-B       null_blk's own badblocks (reads AND writes fail: 6.12)
#   teardown                      disconnect everything, remove targets and namespaces

NVMF_STATE=/run/nvmf
CFG=/sys/kernel/config
S=$CFG/nvmet
NQN_PREFIX=nqn.2026-12.io.libgraid
: "${NVMF_IP:=ip}" "${NVMF_TC:=tc}" "${NVMF_DMSETUP:=dmsetup}"
# libdevmapper manages /dev/mapper itself: there is no udev in the guest.
export DM_DISABLE_UDEV=1

nvmf_die() {
	echo "nvmeof-lib: $*" >&2
	return 1
}

nvmf_init() {
	mkdir -p "$NVMF_STATE"
	grep -q " $CFG configfs" /proc/mounts || mount -t configfs none "$CFG" ||
		nvmf_die "cannot mount configfs" || return 1
	[ -d "$S" ] || nvmf_die "no $S: nvmet not loaded" || return 1
	[ -d "$CFG/nullb" ] || nvmf_die "no $CFG/nullb: null_blk not loaded" || return 1
	$NVMF_IP link set lo up
}

nvmf_nqn() { echo "$NQN_PREFIX:h$1"; }
# 32 hex digits: "libgraid" in ASCII, then host and namespace numbers.
nvmf_nguid() { printf '6c69626772616964%08x%08x\n' "$1" "$2"; }
nvmf_uuid() {
	nvmf_nguid "$1" "$2" | sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)/\1-\2-\3-\4-/'
}
nvmf_pid() { cat "$NVMF_STATE/h$1.pid" 2>/dev/null; }
nvmf_in() { # nvmf_in K CMD...: run CMD in hK's network namespace
	local k=$1
	shift
	nsenter -t "$(nvmf_pid "$k")" -n "$@"
}

nvmf_host_add() {
	local k=$1 pid
	[ -z "$(nvmf_pid "$k")" ] || nvmf_die "h$k exists" || return 1
	unshare -n sleep 1000000 &
	pid=$!
	echo "$pid" >"$NVMF_STATE/h$k.pid"
	# wait until the namespace is the sleeper's (unshare execs it)
	for _ in $(seq 1 50); do
		[ "$(readlink /proc/$pid/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.1
	done
	nvmf_veth "$k" "" 18 "$k" || return 1
	nvmf_in "$k" $NVMF_IP link set lo up
}

# nvmf_veth K SUFFIX NET PORTID: a veth pair vhK$SUFFIX -- vtK$SUFFIX on 10.NET.K.0/24 and
# an nvmet port listening on the target end.
nvmf_veth() {
	local k=$1 sfx=$2 net=$3 port=$4 p
	$NVMF_IP link add "vh$k$sfx" type veth peer name "vt$k$sfx" || return 1
	$NVMF_IP link set "vt$k$sfx" netns "$(nvmf_pid "$k")" || return 1
	$NVMF_IP addr add "10.$net.$k.1/24" dev "vh$k$sfx"
	$NVMF_IP link set "vh$k$sfx" up
	nvmf_in "$k" $NVMF_IP addr add "10.$net.$k.2/24" dev "vt$k$sfx"
	nvmf_in "$k" $NVMF_IP link set "vt$k$sfx" up
	p=$S/ports/$port
	mkdir "$p" || return 1
	echo "10.$net.$k.2" >"$p/addr_traddr"
	echo tcp >"$p/addr_trtype"
	echo 4420 >"$p/addr_trsvcid"
	echo ipv4 >"$p/addr_adrfam"
	echo "$port" >>"$NVMF_STATE/h$k.ports"
	echo "10.$net.$k.2" >>"$NVMF_STATE/h$k.addrs"
}

nvmf_path_add() { nvmf_veth "$1" b 19 $((100 + $1)); }

# The block device of a configfs null_blk: 6.12 names it after the configfs item; older
# kernels nullbINDEX.
nvmf_nullb_dev() {
	local name=$1
	if [ -b "/dev/$name" ]; then echo "/dev/$name"; else echo "/dev/nullb$(cat "$CFG/nullb/$name/index")"; fi
}

nvmf_ns_add() {
	local k=$1 n=$2 mb=$3 nb sub ns dev sectors
	nb=$CFG/nullb/nbh${k}_$n
	mkdir "$nb" || return 1
	echo $((mb)) >"$nb/size"
	echo 4096 >"$nb/blocksize"
	echo 1 >"$nb/memory_backed"
	echo 1 >"$nb/power" || return 1
	for _ in $(seq 1 50); do [ -b "$(nvmf_nullb_dev "nbh${k}_$n")" ] && break; sleep 0.1; done
	dev=$(nvmf_nullb_dev "nbh${k}_$n")
	[ -b "$dev" ] || nvmf_die "null_blk nbh${k}_$n made no device" || return 1
	echo "$dev" >"$NVMF_STATE/h${k}_$n.nullb"
	sectors=$((mb * 2048))
	echo "$sectors" >"$NVMF_STATE/h${k}_$n.sectors"
	$NVMF_DMSETUP create "dmh${k}_$n" --table "0 $sectors linear $dev 0" || return 1
	sub=$S/subsystems/$(nvmf_nqn "$k")
	if [ ! -d "$sub" ]; then
		mkdir "$sub" || return 1
		echo 1 >"$sub/attr_allow_any_host"
		echo "graidh$k" >"$sub/attr_serial" 2>/dev/null
		echo "libgraid-bed-h$k" >"$sub/attr_model" 2>/dev/null
	fi
	ns=$sub/namespaces/$n
	mkdir "$ns" || return 1
	echo -n "/dev/mapper/dmh${k}_$n" >"$ns/device_path"
	nvmf_uuid "$k" "$n" >"$ns/device_nguid"
	nvmf_uuid "$k" "$n" >"$ns/device_uuid"
	echo 1 >"$ns/enable" || nvmf_die "cannot enable namespace $n of h$k" || return 1
}

nvmf_link_port() { # from inside hK, so that the port listens in hK's network namespace
	local k=$1 port=$2 nqn
	nqn=$(nvmf_nqn "$k")
	[ -e "$S/ports/$port/subsystems/$nqn" ] && return 0
	nvmf_in "$k" ln -s "$S/subsystems/$nqn" "$S/ports/$port/subsystems/$nqn"
}
nvmf_export() {
	local k=$1 port
	for port in $(cat "$NVMF_STATE/h$k.ports"); do nvmf_link_port "$k" "$port" || return 1; done
}
nvmf_link() { nvmf_export "$1"; }
nvmf_unlink() {
	local k=$1 port nqn
	nqn=$(nvmf_nqn "$k")
	for port in $(cat "$NVMF_STATE/h$k.ports"); do rm -f "$S/ports/$port/subsystems/$nqn"; done
}

nvmf_ctrl_list() { ls /sys/class/nvme 2>/dev/null | grep '^nvme[0-9]*$' | sort; }

# nvmf_connect K [a|b] [extra options]: prints the new controller's name. Default timeouts
# are the suite's (NVMF_OPTS); extra options are appended (a later one wins in the kernel).
nvmf_connect() {
	local k=$1 path=${2:-a} extra=${3:-} addr before after c
	addr=10.18.$k.2
	[ "$path" = b ] && addr=10.19.$k.2
	before=$(nvmf_ctrl_list)
	echo "transport=tcp,traddr=$addr,trsvcid=4420,nqn=$(nvmf_nqn "$k"),${NVMF_OPTS:-ctrl_loss_tmo=60,reconnect_delay=1,fast_io_fail_tmo=2,keep_alive_tmo=2}${extra:+,$extra}" \
		>/dev/nvme-fabrics || nvmf_die "connect to h$k ($addr) failed" || return 1
	after=$(nvmf_ctrl_list)
	c=$(echo "$after" | grep -v -x -F "$before" | head -n 1)
	[ -n "$c" ] || nvmf_die "no new controller after connecting h$k" || return 1
	# wait for its namespaces' block devices
	for _ in $(seq 1 100); do
		[ "$(cat "/sys/class/nvme/$c/state" 2>/dev/null)" = live ] && [ -b "$(nvmf_dev "$k" 1 2>/dev/null)" ] && break
		sleep 0.1
	done
	echo "$c"
}

nvmf_dev() {
	local want b g
	want=$(nvmf_nguid "$1" "$2")
	for b in /sys/block/nvme*; do
		case ${b##*/} in *c*) continue ;; esac # hidden per-path disks nvmeXcYnZ
		[ -r "$b/nguid" ] || continue # the QEMU drives have none
		g=$(tr -d '\n-' <"$b/nguid")
		[ "$g" = "$want" ] && [ -b "/dev/${b##*/}" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	nvmf_die "no block device with NGUID $want (h$1 namespace $2)"
}

nvmf_ctrls() {
	local k=$1 c out='' nqn
	nqn=$(nvmf_nqn "$k")
	for c in $(nvmf_ctrl_list); do
		[ "$(cat "/sys/class/nvme/$c/subsysnqn" 2>/dev/null)" = "$nqn" ] && out="$out $c"
	done
	echo "${out# }"
}
nvmf_state() {
	local c out=''
	for c in $(nvmf_ctrls "$1"); do out="$out $c=$(cat "/sys/class/nvme/$c/state" 2>/dev/null)"; done
	echo "${out# }"
}

nvmf_sfx() { [ "${1:-}" = b ] && echo b; }
nvmf_outage() {
	local k=$1 p
	for p in ${2:-a $( [ -e "/sys/class/net/vh${k}b" ] && echo b )}; do
		$NVMF_TC qdisc add dev "vh$k$(nvmf_sfx "$p")" root netem loss 100% || return 1
		nvmf_in "$k" $NVMF_TC qdisc add dev "vt$k$(nvmf_sfx "$p")" root netem loss 100% || return 1
	done
}
nvmf_heal() {
	local k=$1 p
	for p in ${2:-a $( [ -e "/sys/class/net/vh${k}b" ] && echo b )}; do
		$NVMF_TC qdisc del dev "vh$k$(nvmf_sfx "$p")" root 2>/dev/null
		nvmf_in "$k" $NVMF_TC qdisc del dev "vt$k$(nvmf_sfx "$p")" root 2>/dev/null
	done
	return 0
}

nvmf_disconnect() {
	local c
	for c in $(nvmf_ctrls "$1"); do echo 1 >"/sys/class/nvme/$c/delete_controller"; done
	return 0
}

nvmf_media_error() {
	local k=$1 n=$2 s=$3 c=$4 keep=${5:-} dev total name
	name=dmh${k}_$n
	dev=$(cat "$NVMF_STATE/h${k}_$n.nullb")
	total=$(cat "$NVMF_STATE/h${k}_$n.sectors")
	[ "$keep" = keep ] || nvmf_media_garbage "$dev" "$s" "$c" || return 1
	# dm-flakey with up 0 s, down 1 s is always down; error_reads fails reads, passes writes.
	printf '0 %s linear %s 0\n%s %s flakey %s %s 0 1 1 error_reads\n%s %s linear %s %s\n' \
		"$s" "$dev" "$s" "$c" "$dev" "$s" $((s + c)) $((total - s - c)) "$dev" $((s + c)) |
		$NVMF_DMSETUP load "$name" || return 1
	$NVMF_DMSETUP resume "$name"
}
nvmf_media_garbage() {
	local dev=$1 s=$2 c=$3
	# The block's content is gone: garbage under the bad sectors, in whole 4 KiB blocks, direct
	# and synced: a buffered write (512-byte O_DIRECT is refused on a 4 KiB device and busybox
	# then writes through the page cache) landed seconds later, over the repair.
	[ $((s % 8)) -eq 0 ] && [ $((c % 8)) -eq 0 ] ||
		nvmf_die "media_error: sectors $s+$c are not whole 4 KiB blocks" || return 1
	dd if=/dev/urandom of="$dev" bs=4096 seek=$((s / 8)) count=$((c / 8)) oflag=direct \
		conv=notrunc,fsync 2>/dev/null || nvmf_die "cannot overwrite $dev sectors $s+$c"
}
nvmf_media_clear() {
	local k=$1 n=$2 name
	name=dmh${k}_$n
	echo "0 $(cat "$NVMF_STATE/h${k}_$n.sectors") linear $(cat "$NVMF_STATE/h${k}_$n.nullb") 0" |
		$NVMF_DMSETUP load "$name" || return 1
	$NVMF_DMSETUP resume "$name"
}
nvmf_badblocks() { echo "$3" >"$CFG/nullb/nbh${1}_$2/badblocks"; }

nvmf_teardown() {
	local f k port n nqn
	for f in "$NVMF_STATE"/h*.pid; do
		[ -e "$f" ] || continue
		k=${f##*/h}
		k=${k%.pid}
		nvmf_heal "$k"
		nvmf_disconnect "$k"
	done
	sleep 1
	for f in "$NVMF_STATE"/h*.pid; do
		[ -e "$f" ] || continue
		k=${f##*/h}
		k=${k%.pid}
		nqn=$(nvmf_nqn "$k")
		for port in $(cat "$NVMF_STATE/h$k.ports" 2>/dev/null); do
			rm -f "$S/ports/$port/subsystems/$nqn"
			rmdir "$S/ports/$port" 2>/dev/null
		done
		for n in "$S/subsystems/$nqn"/namespaces/*; do
			[ -d "$n" ] || continue
			echo 0 >"$n/enable"
			rmdir "$n"
			$NVMF_DMSETUP remove "dmh${k}_${n##*/}" 2>/dev/null
			rmdir "$CFG/nullb/nbh${k}_${n##*/}" 2>/dev/null
		done
		rmdir "$S/subsystems/$nqn" 2>/dev/null
		kill "$(cat "$f")" 2>/dev/null
		rm -f "$f" "$NVMF_STATE/h$k".* "$NVMF_STATE/h${k}_"*
	done
	return 0
}

# As a command: sh nvmeof-lib.sh COMMAND ARGS
case ${0##*/} in
nvmeof-lib.sh)
	cmd=${1:?usage: nvmeof-lib.sh COMMAND ARGS (see the head of this file)}
	shift
	"nvmf_$cmd" "$@"
	;;
esac
