#!/usr/bin/env bash
# A real one-node Slurm (Debian's 22.05 packages) for tunebot's Slurm tests and benchmarks.
#
#   scripts/slurm.sh install        apt-get the packages (root; does nothing when present)
#   scripts/slurm.sh up DIR [GPUS]  start munged, slurmctld and slurmd with their state in DIR and
#                                   GPUS fake GPUs (default 2); prints SLURM_CONF=DIR/slurm.conf
#   scripts/slurm.sh down DIR       stop what `up DIR` started, by pid
#
# No systemd: the daemons run in the background and are stopped by their pid files. Details that
# matter (each cost a drained node or a silent failure when missing):
#   - a gres.conf GPU needs File= naming a character device; plain files are refused and a GPU
#     without File= is dropped, which drains the node. The fake GPUs are /dev/null's device.
#   - config_overrides lets the node claim more CPUs than the machine's 2, so jobs run side by side.
#   - bf_interval=1 starts pending jobs within a second; MinJobAge keeps finished jobs in squeue
#     for 10 minutes; sacct -c reads the jobcomp/filetxt file (no slurmdbd needed).
set -euo pipefail

cmd=${1:-}
case "$cmd" in
install)
	if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null && command -v munged >/dev/null; then
		exit 0
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
	;;
up)
	dir=${2:?usage: slurm.sh up DIR [GPUS]}
	gpus=${3:-2}
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	host=$(hostname -s)
	mkdir -p "$dir/state" "$dir/spool" "$dir/dev" "$dir/munge"
	for ((i = 0; i < gpus; i++)); do
		[ -c "$dir/dev/nvidia$i" ] || mknod "$dir/dev/nvidia$i" c 1 3
	done
	# munged: its own socket and pid under DIR, the package's key.
	key=/etc/munge/munge.key
	if [ ! -s "$key" ]; then
		mkdir -p /etc/munge
		dd if=/dev/urandom bs=1 count=1024 of="$key" 2>/dev/null
		chmod 400 "$key"
		chown munge:munge "$key" 2>/dev/null || true
	fi
	chown munge:munge "$dir/munge" 2>/dev/null || true
	chmod 755 "$dir" "$dir/munge"
	socket=$dir/munge/munge.socket.2
	if [ ! -S "$socket" ]; then
		sudo_munge=()
		if id munge >/dev/null 2>&1; then sudo_munge=(setpriv --reuid=munge --regid=munge --clear-groups); fi
		"${sudo_munge[@]}" munged --socket="$socket" --pid-file="$dir/munge/munged.pid" \
			--log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" --key-file="$key" --force
	fi
	port=$((6817 + RANDOM % 1000 * 2))
	last=$((gpus - 1))
	cat >"$dir/slurm.conf" <<EOF
ClusterName=tunebot
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MailProg=/bin/true
MinJobAge=600
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=4096 Gres=gpu:$gpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	echo "NodeName=$host Name=gpu File=$dir/dev/nvidia[0-$last]" >"$dir/gres.conf"
	export SLURM_CONF=$dir/slurm.conf
	slurmctld -f "$SLURM_CONF" -i
	slurmd -f "$SLURM_CONF"
	for _ in $(seq 1 60); do
		state=$(sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)
		case "$state" in idle | mixed | allocated) break ;; esac
		sleep 0.5
	done
	case "${state:-}" in
	idle | mixed | allocated) ;;
	*)
		echo "slurm.sh: the node did not come up (state '${state:-none}'); logs in $dir" >&2
		tail -5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
		exit 1
		;;
	esac
	echo "SLURM_CONF=$SLURM_CONF"
	;;
down)
	dir=${2:?usage: slurm.sh down DIR}
	for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
		[ -s "$pidfile" ] || continue
		pid=$(cat "$pidfile")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$pidfile"
	done
	rm -f "$dir/munge/munge.socket.2" "$dir/munge/munge.socket.2.lock"
	;;
*)
	echo "usage: slurm.sh install | up DIR [GPUS] | down DIR" >&2
	exit 2
	;;
esac
