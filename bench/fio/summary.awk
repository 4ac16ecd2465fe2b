# SPDX-License-Identifier: MIT
# One fio JSON result (--output-format=json, group_reporting: one job) to one line:
#   IOPS MB/s AVG_LAT_US P99_LAT_US ERROR
# IOPS and MB/s (10^6 bytes) are reads and writes together; the average latency is
# weighted by each direction's IOPS; p99 is the worse direction's. Latency is fio's total
# (submission + completion; the job files set lat_percentiles=1). Plain awk (busybox's too):
# fio writes one key a line, so no JSON parser is needed.
function val(line) { sub(/^[^:]*: */, "", line); sub(/,$/, "", line); return line + 0 }
/"(read|write|trim|sync)" : \{/ { dir = ""; blk = "" }
/"read" : \{/ { dir = "r"; next }
/"write" : \{/ { dir = "w"; next }
/"[a-z]+_ns" : \{/ { blk = $1; gsub(/"/, "", blk); next }
/^ *"error" :/ && !seen_err { err = val($0); seen_err = 1 }
dir != "" && /^ *"iops" :/ { iops[dir] = val($0) }
dir != "" && /^ *"bw" :/ { bw[dir] = val($0) }
dir != "" && blk == "lat_ns" && /^ *"mean" :/ { mean[dir] = val($0) }
dir != "" && blk == "lat_ns" && /"99\.000000" :/ { p99[dir] = val($0) }
END {
	n = iops["r"] + iops["w"]
	avg = n > 0 ? (iops["r"] * mean["r"] + iops["w"] * mean["w"]) / n : 0
	p = p99["r"] > p99["w"] ? p99["r"] : p99["w"]
	printf "%.0f %.1f %.1f %.1f %d\n", n, (bw["r"] + bw["w"]) * 1024 / 1e6, avg / 1000, p / 1000, err
}
