#!/usr/bin/env bash
# A real one-node Ray cluster (PyPI's ray[default] at a pinned version) for tunebot's Ray tests
# and benchmark.
#
#   scripts/ray.sh install          build (or reuse) the venv and print its directory
#   scripts/ray.sh venv             print the venv's directory (installs nothing)
#   scripts/ray.sh start DIR [GPUS] start a head with its state in DIR and GPUS logical GPUs
#                                   (default 4); prints RAY_ADDRESS=http://127.0.0.1:PORT, the
#                                   head's job server. Started again with the same DIR it
#                                   comes back at the same address (a test of a head that went
#                                   away). With RAY_AUTH_TOKEN set, the head requires it.
#   scripts/ray.sh stop DIR         stop what `start DIR` started, by its process group
#
# The venv lives outside the checkout (${TUNEBOT_RAY_VENV:-$XDG_CACHE_HOME/tunebot/ray-VERSION},
# about 400 MB), so every clone and CI run on a machine shares one; an install takes a lock, as
# two test binaries may want it at once. Details that matter (each cost a failed start here):
#   - Ray replaces a --node-ip-address of 127.0.0.1 by the machine's outside address; 127.0.0.2
#     is loopback too and is kept, so nothing of the cluster leaves this machine.
#   - every port is set from one block picked at random below the ephemeral range (two heads,
#     from two test binaries, run at once): the GCS, the job server, the agents, both metrics
#     ports (fixed by default) and the workers'. A block that is taken fails the start, and the
#     next block is tried.
#   - Ray's sockets live under DIR and a Unix socket's path is at most 107 bytes: keep DIR short
#     (/tmp/tunebot-ray-XXXXXX).
#   - `ray stop` would stop every Ray process of the machine; stop ends only this head's process
#     group. A job's command runs in a session of its own, and Ray's own watcher ends it within a
#     second once the head is gone.
set -euo pipefail

RAY_VERSION=2.60.0
venv=${TUNEBOT_RAY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tunebot/ray-$RAY_VERSION}
python=${PYTHON:-python3}

install() {
	mkdir -p "$(dirname "$venv")"
	exec 9>"$venv.lock"
	flock 9
	if [[ -x $venv/bin/ray && -f $venv/.tunebot-ray && $(cat "$venv/.tunebot-ray") == "$RAY_VERSION" ]]; then
		echo "$venv"
		return
	fi
	echo "ray.sh: installing ray[default]==$RAY_VERSION into $venv (about 400 MB)" >&2
	start=$(date +%s)
	rm -rf "$venv"
	"$python" -m venv "$venv"
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "ray[default]==$RAY_VERSION" >&2
	echo "$RAY_VERSION" >"$venv/.tunebot-ray"
	echo "ray.sh: installed in $(($(date +%s) - start)) s" >&2
	echo "$venv"
}

# ports PORT: the block's fixed ports, as ray start's options and the two variables Ray reads.
ports() {
	local p=$1
	echo "--port $p --ray-client-server-port $((p + 1)) --dashboard-port $((p + 2))" \
		"--dashboard-agent-listen-port $((p + 3)) --metrics-export-port $((p + 4))" \
		"--min-worker-port $((p + 16)) --max-worker-port $((p + 63))"
}

start() {
	local dir=${1:?usage: ray.sh start DIR [GPUS]} gpus=${2:-4}
	[[ -x $venv/bin/ray ]] || { echo "ray.sh: Ray is not installed: bash scripts/ray.sh install" >&2; exit 1; }
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local tries=1 base
	if [[ -s $dir/port ]]; then
		base=$(cat "$dir/port") # the same address as before
	else
		base=$((20032 + (RANDOM % 190) * 64))
		tries=5
	fi
	for ((i = 0; i < tries; i++)); do
		rm -rf "$dir/r"
		mkdir -p "$dir/r"
		# setsid: the head's processes share one process group of their own, which stop ends.
		# shellcheck disable=SC2046
		env AUTOSCALER_METRIC_PORT=$((base + 5)) DASHBOARD_METRIC_PORT=$((base + 6)) RAY_USAGE_STATS_ENABLED=0 \
			${RAY_AUTH_TOKEN:+RAY_AUTH_MODE=token} setsid "$venv/bin/ray" start --head --disable-usage-stats \
			--node-ip-address 127.0.0.2 --dashboard-host 127.0.0.1 --include-dashboard=true \
			--num-cpus 2 --num-gpus "$gpus" --temp-dir "$dir/r" $(ports "$base") \
			>"$dir/start.log" 2>&1 </dev/null &
		local pid=$!
		echo "$pid" >"$dir/pgid"
		if wait "$pid" && up "$base"; then
			echo "$base" >"$dir/port"
			echo "RAY_ADDRESS=http://127.0.0.1:$((base + 2))"
			return
		fi
		stop "$dir"
		base=$((20032 + (RANDOM % 190) * 64))
	done
	echo "ray.sh: the head did not start; its log:" >&2
	tail -20 "$dir/start.log" >&2 || true
	exit 1
}

# up PORT: waits (up to a minute) until the head's job server answers and its node shows
# its GPUs, asking with the venv's Python, so that no curl is needed.
up() {
	"$venv/bin/python" - "http://127.0.0.1:$(($1 + 2))/api/v0/nodes?detail=1" <<'PY'
import os, sys, time, urllib.request
req = urllib.request.Request(sys.argv[1])
if os.environ.get("RAY_AUTH_TOKEN"):
    req.add_header("Authorization", "Bearer " + os.environ["RAY_AUTH_TOKEN"])
for _ in range(120):
    try:
        if b'"GPU"' in urllib.request.urlopen(req, timeout=2).read():
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.5)
sys.exit(1)
PY
}

stop() {
	local dir=${1:?usage: ray.sh stop DIR} pgid
	[[ -s $dir/pgid ]] || return 0
	pgid=$(cat "$dir/pgid")
	kill -TERM -- "-$pgid" 2>/dev/null || return 0
	for _ in $(seq 1 30); do
		kill -0 -- "-$pgid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$pgid" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 -- "-$pgid" 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$dir/pgid"
}

case "${1:-}" in
install) install ;;
venv) echo "$venv" ;;
start) start "${@:2}" ;;
stop) stop "${@:2}" ;;
*)
	echo "usage: ray.sh install | venv | start DIR [GPUS] | stop DIR" >&2
	exit 2
	;;
esac
