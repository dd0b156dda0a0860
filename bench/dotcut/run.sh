#!/bin/bash
# bench/dotcut/run.sh OLD NEW: `mpitrace dot` on parts of the benchmark
# traces (--ranks, --window), with binary OLD then binary NEW: wall time,
# user CPU, peak RSS (/usr/bin/time), and whether stdout and stderr are the
# same. The traces, as docs/performance.md makes them:
#   MPITRACE_BENCH_DIR=/tmp/bench20m go test ./cmd/mpitrace/internal/cli -bench Fold -run '^$'
#   go run ./bench/halotrace -o /tmp/bench20m/wide-16384 -ranks 16384 -iters 50
# B (default /tmp/bench20m) holds them; REC, when set, is a recorded run's
# trace directory, cut as "--ranks 1-3 --window 10ms:40ms".
set -u
old=$1 new=$2
B=${B:-/tmp/bench20m}
H=$B/halo100-40000 S=$B/serial1-20000000 W=$B/wide-16384
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases="$H --ranks 0-1 --window 1ms:2ms
$H --window 100ms:101ms
$H --ranks 7
$S --window 1s:1.001s
$W --ranks 0-7
$W --window 1ms:2ms"
if [ -n "${REC:-}" ]; then
	cases="$cases
$REC --ranks 1-3 --window 10ms:40ms"
fi
while read -r tr args; do
	for b in old new; do
		bin=$old
		[ $b = new ] && bin=$new
		/usr/bin/time -f "%e s, %U s user, %M KB" -o "$tmp/t-$b" "$bin" dot "$tr" $args -o "$tmp/d-$b.dot" 2>"$tmp/e-$b" >/dev/null
		echo "exit $?" >>"$tmp/e-$b"
		grep -v '^Command exited' "$tmp/t-$b" >"$tmp/t2-$b"
	done
	same=same
	cmp -s "$tmp/d-old.dot" "$tmp/d-new.dot" && cmp -s "$tmp/e-old" "$tmp/e-new" || same=differ
	echo "$(basename "$tr") $args | old: $(cat "$tmp/t2-old") | new: $(cat "$tmp/t2-new") | $same ($(tail -1 "$tmp/e-new"))"
done <<<"$cases"
