#!/usr/bin/env bash
# The bench scenarios that write most (create-drafts, publish, recovery), and the nodes scenario
# (several `herald serve --node-addr` over one database), on PostgreSQL: a throwaway server
# (initdb and pg_ctl from Debian's postgresql package; as the postgres user when run as root) with
# PostgreSQL's durable defaults (fsync, synchronous_commit, full_page_writes on), on a free
# loopback port, removed afterwards. Each server and ceiling of the bench gets a schema of its
# own. Usage: bench/postgres.sh BIN [herald bench flags...]
#
# With HERALD_PG_PAIRS=N it runs, instead, N pairs of quick publish runs, one on bbolt and one on
# the PostgreSQL server, alternating, and prints each pair's jobs completed per second and server
# CPU per job on both, and the ratio of the completions: PostgreSQL beside bbolt, the same build,
# the machine's drift falling on both alike; then the median of the pairs' ratios. With
# HERALD_PG_FULL=1 too, full runs instead of quick ones (the publish of `make bench`, with its
# backlog). `make bench` runs three full pairs after the suites: a ratio of two runs minutes apart
# moves with the machine's speed in those minutes (the simulator's CPU a job, the same work in
# every run, moved between 369 and 530 µs over six runs of one afternoon here), and the pairs'
# median is the figure to read.
set -euo pipefail
bin=$1
shift
pgbin=""
if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
	pgbin=$(dirname "$(command -v pg_ctl)")
else
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then pgbin=$d; break; fi
	done
fi
if [ -z "$pgbin" ]; then
	echo "PostgreSQL is not installed (apt-get install postgresql): the PostgreSQL bench was not run" >&2
	exit 0
fi
dir=$(mktemp -d /tmp/herald-bench-pg-XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then
	chown postgres "$dir"
	as=(runuser -u postgres --)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 55439)
stop() {
	"${as[@]}" "$pgbin/pg_ctl" -D "$dir/data" stop -m fast >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap stop EXIT
"${as[@]}" "$pgbin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-instructions >/dev/null
"${as[@]}" "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='' -c max_connections=200" start >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
if [ -z "${HERALD_PG_PAIRS:-}" ]; then
	"$bin" bench --store "$url" --scenario create-drafts,publish,recovery,nodes "$@"
	exit
fi
# figures FILE: "completed/s cpu-µs/job" of the publish run in FILE.
figures() { python3 "$(dirname "$0")/ab.py" --figures "$1"; }
quick=(--quick)
if [ -n "${HERALD_PG_FULL:-}" ]; then quick=(); fi
ratios=()
for i in $(seq 1 "$HERALD_PG_PAIRS"); do
	"$bin" bench --scenario publish "${quick[@]}" --out "$dir/bbolt.json" "$@" >/dev/null 2>&1
	"$bin" bench --scenario publish "${quick[@]}" --out "$dir/pg.json" --store "$url" "$@" >/dev/null 2>&1
	read -r bc bu <<<"$(figures "$dir/bbolt.json")"
	read -r pc pu <<<"$(figures "$dir/pg.json")"
	ratio=$(python3 -c "print(round($pc / $bc, 2))")
	ratios+=("$ratio")
	echo "pair $i: jobs completed/s bbolt $bc, PostgreSQL $pc, ratio $ratio; server CPU µs per job bbolt $bu, PostgreSQL $pu"
done
echo "PostgreSQL's publish beside bbolt's, jobs completed/s: median $(python3 -c "import statistics, sys; print(round(statistics.median(map(float, sys.argv[1:])), 2))" "${ratios[@]}") of ${#ratios[@]} pairs (${ratios[*]})"
