# SPDX-License-Identifier: MIT
# Sourced by the fio suites of the test VM (ublk.sh, md.sh): fio runs, and short runs of
# the BENCHMARKS.md profiles from bench/fio's job files (run packs them into /vm), one table
# row each. Needs FIO (the fio binary). Environment: VM_FIO_RUNTIME (seconds per profile,
# 3), VM_FIO_JOBS (2), VM_FIO_IODEPTH (16), VM_FIO_PROFILES (all six), FIO_TABLE (the file
# that collects every row of this boot, /tmp/fio-table).
FIO_PROFILES=${VM_FIO_PROFILES:-4k-randread 4k-randwrite 4k-70-30 64k-randwrite 1m-seqread 1m-seqwrite}
FIO_TABLE=${FIO_TABLE:-/tmp/fio-table}

# fio_run NAME OPTION...: true if fio exits 0; its output is kept in /tmp/fio-NAME.out.
fio_run() {
	fr_name=$1
	shift
	if "$FIO" --thread "$@" >"/tmp/fio-$fr_name.out" 2>&1; then return 0; fi
	echo "  fio $fr_name failed:"
	tail -n 25 "/tmp/fio-$fr_name.out" | sed 's/^/    fio: /'
	return 1
}

fio_header() {
	printf '  %-14s %-16s %9s %9s %11s %11s\n' profile target IOPS MB/s "avg lat us" "p99 lat us"
}

# profiles TARGET DEVICE OFFSET_MB SIZE_MB: every profile on DEVICE's range, with libaio
# (what a program on a block device uses); prints a row each and appends it to FIO_TABLE.
# True if every profile ran.
profiles() {
	pr_target=$1 pr_dev=$2 pr_off=$3 pr_size=$4 pr_ok=0
	export FIO_RUNTIME=${VM_FIO_RUNTIME:-3} FIO_RAMP=0 FIO_JOBS=${VM_FIO_JOBS:-2}
	export FIO_IODEPTH=${VM_FIO_IODEPTH:-16}
	export FIO_SEQ_SIZE=$((pr_size / FIO_JOBS))M
	echo "  $pr_target: fio profiles on $pr_dev [${pr_off}M, +${pr_size}M), ${FIO_RUNTIME} s each, $FIO_JOBS jobs x iodepth $FIO_IODEPTH"
	fio_header
	for p in $FIO_PROFILES; do
		if fio_run "$pr_target-$p" --ioengine=libaio --filename="$pr_dev" \
			--offset="${pr_off}M" --size="${pr_size}M" --output-format=json \
			--output="/tmp/$pr_target-$p.json" "/vm/$p.fio"; then
			# shellcheck disable=SC2046 # word splitting of the summary is the point
			set -- $(awk -f /vm/summary.awk "/tmp/$pr_target-$p.json")
			printf '  %-14s %-16s %9s %9s %11s %11s\n' "$p" "$pr_target" "$1" "$2" "$3" "$4"
			echo "$p $pr_target $1 $2 $3 $4" >>"$FIO_TABLE"
		else
			pr_ok=1
		fi
	done
	return $pr_ok
}
