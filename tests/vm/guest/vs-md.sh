#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# A benchmark of the test VM (issue 22; tests/vm/suites-bench, never in the test list): md
# and libgraid through graid-ublk on the same five emulated NVMe drives, alternating in one
# boot, VSMD_ROUNDS rounds (3) per RAID level (VSMD_LEVELS, "6 5"), the BENCHMARKS.md
# profiles; medians of IOPS, of the guest's CPU time and context switches per I/O, and of
# the I/Os and flushes the five drives served per I/O (their /sys/block stat counters).
#
# usage: vs-md.sh MDADM FIO GRAIDCTL GRAID_UBLK [ARRAY_BENCH|-] [PERF]   (NVME0..NVME4 from /init)
#
# With ARRAY_BENCH: after the rounds of each level, the library through its own async API
# (bench/array/array_bench --devices on the same drives, --only array, 2 threads x qd 16 as
# fio's 2 jobs x iodepth 16), so that the front-end's share and the library's share of a gap
# are separate figures. Its CPU per I/O is the process's own (CPU s/GB x bytes per I/O),
# not the guest's: interrupts and kernel threads are not in it.
#
# With PERF (a perf binary): where the guest's CPU goes, per target and profile. Each fio run
# goes under `perf record -a` (cpu-clock, the only clock TCG offers), and the report prints
# the shares by command and object and the heaviest symbols; for graid-ublk a second run of
# the profile under `perf trace -s` counts the server's system calls per I/O. perf's own
# work is in those runs' CPU figures: they profile, they do not measure.
#
# The floor (VSMD_FLOOR, 1; 0 leaves it out): each round also runs the 4 KiB random profiles
# on one bare drive (NVME0's first 256 MiB, before either array is made on it), so that what one NVMe read
# or write costs this guest by itself stands beside what md and libgraid add to it. A 4 KiB
# read from either array is one such read; a 4 KiB write, two reads and three writes.
#
# CPU per I/O: the guest's busy time (user + nice + system + irq + softirq + steal of
# /proc/stat, all CPUs) over the profile, divided by the I/Os fio completed (IOPS x
# runtime). It counts everything the guest did for those I/Os: md's kernel threads, or
# ublk's round trips, graid-ublk's threads and the library, and the emulated drives'
# driver. Under TCG the absolute figures mean little; the two targets in one boot compare.
# Prints FIGURE lines and a table; exit 0 unless a step failed (never on a figure).
MDADM=${1:?usage: vs-md.sh MDADM FIO GRAIDCTL GRAID_UBLK}
FIO=${2:?} GCTL=${3:?} UBLK=${4:?} AB=${5:-} PERF=${6:-}
[ "$AB" = - ] && AB=
. /vm/fio-lib.sh
ROUNDS=${VSMD_ROUNDS:-3}
LEVELS=${VSMD_LEVELS:-6 5}
M="$NVME0 $NVME1 $NVME2 $NVME3 $NVME4"
ROWS=/tmp/vsmd.rows
: >"$ROWS"
FLOOR_ROWS=/tmp/vsmd.floor
: >"$FLOOR_ROWS"
export MDADM_NO_UDEV=1
mkdir -p /run/mdadm
failed=0

# "busy_jiffies ctxt" of the whole guest
cpu_snap() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 } /^ctxt / { print $2 }' /proc/stat | tr '\n' ' '; }
# "ios flushes" of the five drives together: reads + writes + discards, and flush requests
# (/sys/block/X/stat fields 1, 5, 12 and 16), what the array sent its members
dev_snap() {
	for d in $M; do cat "/sys/block/${d#/dev/}/stat"; done |
		awk '{ n += $1 + $5 + $12; f += $16 } END { print n, f }'
}

# run_profiles TARGET LEVEL ROUND DEV [PROFILES [ROWS [OFFSET]]]: every profile
# (FIO_PROFILES) on DEV's [OFFSET, +256 MiB) (OFFSET 256M), a row each in ROWS (the table's)
run_profiles() {
	local t=$1 l=$2 r=$3 dev=$4 profs="${5:-$FIO_PROFILES}" rows="${6:-$ROWS}" off="${7:-256M}"
	local p s1 s2 rt
	rt=${VM_FIO_RUNTIME:-3}
	export FIO_RUNTIME=$rt FIO_RAMP=0 FIO_JOBS=${VM_FIO_JOBS:-2}
	export FIO_IODEPTH=${VM_FIO_IODEPTH:-16} FIO_SEQ_SIZE=$((256 / ${VM_FIO_JOBS:-2}))M
	for p in $profs; do
		s1="$(cpu_snap) $(dev_snap)"
		if ! $PERF_WRAP fio_run "$t-$l-$p" --ioengine=libaio --filename="$dev" --offset="$off" \
			--size=256M --output-format=json --output="/tmp/vsmd.json" "/vm/$p.fio"; then
			failed=1
			continue
		fi
		s2="$(cpu_snap) $(dev_snap)"
		[ -n "$PERF" ] && perf_report "$t-$l-$p" "$dev" "$p"
		# shellcheck disable=SC2046
		set -- $(awk -f /vm/summary.awk /tmp/vsmd.json) $s1 $s2
		# $1 IOPS; $6-$9 busy, ctxt, member I/Os, flushes before; $10-$13 after
		if [ "${1:-0}" = 0 ]; then
			echo "FAIL vs-md $t-$l-$p: fio completed no I/O"
			failed=1
			continue
		fi
		echo "$l $p $t $r $1 $(awk -v i="$1" -v rt="$rt" -v b="$((${10} - $6))" \
			-v c="$((${11} - $7))" -v m="$((${12} - $8))" -v f="$((${13} - $9))" \
			'BEGIN { n = i * rt; if (n < 1) n = 1
				printf "%.1f %.2f %.2f %.3f", b * 10000 / n, c / n, m / n, f / n }')" >>"$rows"
	done
}

floor_round() { # floor_round LEVEL ROUND: the bare drive under the 4 KiB random profiles
	[ "${VSMD_FLOOR:-1}" = 1 ] || return 0
	# The drives are 256 MiB: the same 256 MiB span from its start.
	run_profiles drive "$1" "$2" "$NVME0" "4k-randread 4k-randwrite" "$FLOOR_ROWS" 0
}

# With PERF: fio_run under perf record (perf_fio_run), and what it saw.
PERF_WRAP=''
if [ -n "$PERF" ]; then
	PERF_WRAP=perf_fio_run
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo -1 >/proc/sys/kernel/perf_event_paranoid
fi
perf_fio_run() { # perf_fio_run fio_run NAME OPTION...
	shift
	pf_name=$1
	shift
	"$PERF" record -a -g -q -F 999 -e cpu-clock -o "/tmp/perf-$pf_name.data" -- \
		"$FIO" --thread "$@" >"/tmp/fio-$pf_name.out" 2>&1
}
# perf_report NAME DEV PROFILE: the recorded run's shares; for graid, a run under perf trace
perf_report() {
	local name=$1 dev=$2 prof=$3 d=/tmp/perf-$1.data srv trp
	echo "  perf $name: CPU samples by command and object (all CPUs, >= 1%)"
	"$PERF" report -i "$d" --stdio -q --sort comm,dso --percent-limit 1 2>&1 |
		sed '/^$/d; s/^/    /' | head -n 25
	echo "  perf $name: heaviest symbols (>= 0.7%)"
	"$PERF" report -i "$d" --stdio -q --sort comm,dso,sym --percent-limit 0.7 2>&1 |
		sed '/^$/d; s/^/    /' | head -n 45
	echo "  perf $name: inclusive shares of the array's own threads (>= 2%)"
	"$PERF" report -i "$d" --stdio -q --comm "$(case $name in graid-*) echo graid-ublk-q0,graid-ublk-q1 ;;
		*) echo md0_raid$(echo "$name" | cut -d- -f2) ;; esac)" --children --sort sym -g none \
		--percent-limit 2 2>&1 | sed '/^$/d; s/^/    /' | head -n 40
	rm -f "$d"
	case $name in graid-*) ;; *) return 0 ;; esac
	srv=$(pidof graid-ublk | cut -d' ' -f1)
	[ -n "$srv" ] || return 0
	"$PERF" trace -s -p "$srv" -o "/tmp/trace-$name.out" &
	trp=$!
	sleep 1
	fio_run "trace-$name" --ioengine=libaio --filename="$dev" --offset=256M --size=256M \
		--output-format=json --output="/tmp/trace-$name.json" "/vm/$prof.fio"
	kill -INT $trp
	wait $trp
	# shellcheck disable=SC2046
	set -- $(awk -f /vm/summary.awk "/tmp/trace-$name.json")
	echo "  perf trace $name: graid-ublk's system calls while fio ran ($1 IOPS x ${FIO_RUNTIME} s)"
	awk -v n="$(($1 * FIO_RUNTIME))" '
		/ \([0-9]+\), [0-9]+ events/ { print "    " $0; next }
		$1 ~ /^[a-z_0-9]+$/ && $2 ~ /^[0-9]+$/ && n > 0 {
			printf "    %-22s %9d calls %7.2f per I/O\n", $1, $2, $2 / n }' "/tmp/trace-$name.out"
	rm -f "/tmp/trace-$name.out"
}

md_round() { # md_round LEVEL ROUND
	for d in $M; do dd if=/dev/zero of="$d" bs=1M count=4 conv=notrunc,fsync 2>/dev/null; done
	if ! "$MDADM" --create /dev/md0 --run --force --metadata=1.2 --level="$1" --raid-devices=5 \
		--chunk=64 --assume-clean $M >/tmp/vsmd-md.out 2>&1; then
		echo "FAIL md-create-raid$1: $(tail -n 1 /tmp/vsmd-md.out)"
		failed=1
		return
	fi
	for _ in $(seq 1 50); do [ -b /dev/md0 ] && break; sleep 0.1; done
	run_profiles md "$1" "$2" /dev/md0
	"$MDADM" --stop /dev/md0 >/dev/null 2>&1
	"$MDADM" --zero-superblock $M >/dev/null 2>&1
}

graid_round() { # graid_round LEVEL ROUND
	local srv dev=''
	if ! "$GCTL" create --force --level "$1" --chunk 64K $M >/tmp/vsmd-g.out 2>&1; then
		echo "FAIL graid-create-raid$1: $(tail -n 1 /tmp/vsmd-g.out)"
		failed=1
		return
	fi
	# shellcheck disable=SC2086 # VSMD_UBLK_OPTS: options, split
	"$UBLK" --queues "${VSMD_QUEUES:-2}" --depth 64 ${VSMD_UBLK_OPTS:-} $M >/tmp/vsmd-ublk.dev \
		2>/tmp/vsmd-ublk.err &
	srv=$!
	for _ in $(seq 1 300); do
		dev=$(head -n 1 /tmp/vsmd-ublk.dev 2>/dev/null)
		[ -n "$dev" ] && [ -b "$dev" ] && break
		kill -0 $srv 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$dev" ] || [ ! -b "$dev" ]; then
		echo "FAIL graid-serve-raid$1: $(tail -n 1 /tmp/vsmd-ublk.err)"
		failed=1
		kill -9 $srv 2>/dev/null
		return
	fi
	run_profiles graid "$1" "$2" "$dev"
	kill -TERM $srv
	wait $srv
}

t0=$(date +%s)
for l in $LEVELS; do
	r=1
	while [ $r -le "$ROUNDS" ]; do
		floor_round "$l" $r
		# Alternate which goes first, so that a drift of the machine falls on both.
		if [ $((r % 2)) -eq 1 ]; then md_round "$l" $r; graid_round "$l" $r; else
			graid_round "$l" $r; md_round "$l" $r; fi
		r=$((r + 1))
	done
	if [ -n "$AB" ]; then
		# The async API on the same drives (array_bench prefills and verifies too).
		if "$AB" --devices "$(echo $M | tr ' ' ,)" --force --levels "$l" --member-mib 200 \
			--threads "${VM_FIO_JOBS:-2}" --qd "${VM_FIO_IODEPTH:-16}" \
			--seconds "${VM_FIO_RUNTIME:-3}" --only array --backend "${GRAID_BACKEND:-isal}" \
			>"/tmp/vsmd-ab-$l.out" 2>&1; then
			awk -v l="$l" '$1 ~ /^(4k|64k|1m)-/ && $2 ~ /^[0-9]+$/ {
				b = ($1 ~ /^4k/) ? 4096 : ($1 ~ /^64k/) ? 65536 : 1048576
				printf "FIGURE vs-md raid%s %s async API: %s IOPS, process CPU %.1f us/IO\n", l, $1, $2, $6 * b / 1000
			}' "/tmp/vsmd-ab-$l.out"
		else
			echo "FAIL array-bench-raid$l: $(tail -n 2 "/tmp/vsmd-ab-$l.out" | tr '\n' ' ')"
			failed=1
		fi
	fi
done

# Medians over the rounds, per level, profile and target.
echo "  RAID-L over 5 emulated NVMe drives, chunk 64K, fio libaio $FIO_JOBS jobs x iodepth $FIO_IODEPTH, ${VM_FIO_RUNTIME:-3} s a profile, $ROUNDS rounds alternating (medians)"
printf '  %-6s %-14s %10s %10s %7s %12s %12s %9s %9s %9s %9s %9s %9s\n' level profile "graid IOPS" \
	"md IOPS" ratio "graid us/IO" "md us/IO" "graid cs" "md cs" "graid mio" "md mio" "graid fl" "md fl"
awk '
function med(k,   n, i, j, t, v) {
	n = cnt[k]
	for (i = 1; i <= n; i++) v[i] = val[k, i]
	for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{
	for (f = 5; f <= 9; f++) { k = $1 SUBSEP $2 SUBSEP $3 SUBSEP f; cnt[k]++; val[k, cnt[k]] = $f }
	if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[++no] = $1 SUBSEP $2 }
}
END {
	for (o = 1; o <= no; o++) {
		split(order[o], lp, SUBSEP)
		gi = med(lp[1] SUBSEP lp[2] SUBSEP "graid" SUBSEP 5); mi = med(lp[1] SUBSEP lp[2] SUBSEP "md" SUBSEP 5)
		gc = med(lp[1] SUBSEP lp[2] SUBSEP "graid" SUBSEP 6); mc = med(lp[1] SUBSEP lp[2] SUBSEP "md" SUBSEP 6)
		gs = med(lp[1] SUBSEP lp[2] SUBSEP "graid" SUBSEP 7); ms = med(lp[1] SUBSEP lp[2] SUBSEP "md" SUBSEP 7)
		gm = med(lp[1] SUBSEP lp[2] SUBSEP "graid" SUBSEP 8); mm = med(lp[1] SUBSEP lp[2] SUBSEP "md" SUBSEP 8)
		gf = med(lp[1] SUBSEP lp[2] SUBSEP "graid" SUBSEP 9); mf = med(lp[1] SUBSEP lp[2] SUBSEP "md" SUBSEP 9)
		r = (mi > 0) ? gi / mi : 0
		printf "  %-6s %-14s %10.0f %10.0f %6.2fx %12.1f %12.1f %9.2f %9.2f %9.2f %9.2f %9.3f %9.3f\n", "raid" lp[1], lp[2], gi, mi, r, gc, mc, gs, ms, gm, mm, gf, mf
		fig[o] = sprintf("FIGURE vs-md raid%s %s: graid/md %.2fx IOPS, CPU %.1f vs %.1f us/IO", lp[1], lp[2], r, gc, mc)
	}
	for (o = 1; o <= no; o++) print fig[o]
}' "$ROWS"
if [ -s "$FLOOR_ROWS" ]; then
	echo "  one bare drive, the same fio settings (medians of every round of every level):"
	awk '
	{ k = $2; n[k]++; i[k, n[k]] = $5; u[k, n[k]] = $6; c[k, n[k]] = $7; if (!(k in seen)) { seen[k] = 1; ord[++no] = k } }
	function med(a, k, m,   j, l, t, v) {
		for (j = 1; j <= m; j++) v[j] = a[k, j]
		for (j = 2; j <= m; j++) { t = v[j]; for (l = j - 1; l >= 1 && v[l] > t; l--) v[l + 1] = v[l]; v[l + 1] = t }
		return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
	}
	END {
		for (o = 1; o <= no; o++) {
			k = ord[o]
			printf "FIGURE vs-md drive %s: %.0f IOPS, CPU %.1f us/IO, %.2f cs/IO\n", k, med(i, k, n[k]), med(u, k, n[k]), med(c, k, n[k])
		}
	}' "$FLOOR_ROWS"
fi
echo "  every round's rows (level profile target round IOPS us/IO cs/IO member-I/Os/IO flushes/IO):"
sed 's/^/    /' "$ROWS" "$FLOOR_ROWS"
echo "vs-md: $(($(date +%s) - t0)) s"
[ $failed -eq 0 ] && echo "PASS vs-md: every profile ran on both targets, $ROUNDS rounds" ||
	echo "FAIL vs-md: a step failed (above)"
exit $failed
