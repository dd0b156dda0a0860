#!/bin/sh
# The analysis as an MPI job, by number of processes: each process's peak
# resident memory, the job's wall time, and the exchanges (--mpi-stats).
#
#   bench/mpijob/run.sh MPITRACE TRACEDIR [P ...]        (default P: 1 2 4 8)
#
# Runs 'mpitrace critpath --mpi' under Open MPI's mpirun (oversubscribed:
# P may exceed the cores), each process under /usr/bin/time, and prints a
# line per P: wall seconds, the processes' peak RSS in MiB (sorted), and
# the exchanges: MPI collectives per process and bytes sent in all. Set
# MPIRUN and MPICC for another MPI (mpirun.mpich, mpicc.mpich; the rank
# variable is then PMI_RANK), FLAGS for more of critpath's flags (e.g.
# FLAGS="--weights measured"). As root, Open MPI needs
# OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
set -eu
bin=$(realpath "$1")
trace=$2
shift 2
[ $# -gt 0 ] || set -- 1 2 4 8
mpirun=${MPIRUN:-mpirun.openmpi}
mpicc=${MPICC:-mpicc.openmpi}
flags=
case $mpirun in *openmpi*) flags=--oversubscribe ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for p in "$@"; do
	rm -f "$out"/rss.*
	start=$(date +%s.%N)
	# shellcheck disable=SC2016,SC2086 # $0 expanded by each process's shell; FLAGS split into words
	$mpirun $flags -np "$p" sh -c '/usr/bin/time -f %M -o "$0/rss.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" "$@"' \
		"$out" "$bin" critpath --mpi --mpicc "$mpicc" --mpi-stats "$out/stats.json" ${FLAGS:-} -o /dev/null "$trace" >/dev/null
	end=$(date +%s.%N)
	rss=$(cat "$out"/rss.* | sort -n | awk '{printf "%s%.0f", sep, $1/1024; sep=" "}')
	ex=$(grep -o '"\(exchanges\|bytes_sent\)": [0-9]*' "$out/stats.json" | awk -F': ' '
		/exchanges/ { if ($2 > n) n = $2 }
		/bytes_sent/ { b += $2 }
		END { printf "exchanges/process %d, bytes sent %d", n, b }')
	printf 'P=%d wall %.2f s; peak RSS MiB: %s; %s\n' "$p" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$rss" "$ex"
done
