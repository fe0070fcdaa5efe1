# Sourced by the Slurm tests: a one-node Slurm cluster of this host, made from Debian's
# slurm-wlm and munge packages, with all its state in one folder and its own ports.
#   slurm_cluster_start DIR   starts munged, slurmctld and slurmd; exports SLURM_CONF
#   slurm_cluster_stop        stops them by their PIDs
# A test sets `trap slurm_cluster_stop EXIT` (and exits on INT and TERM, as CTest's
# timeout sends) so that the jobs and daemons stop however it ends.

slurm_cluster_pids=()

# The reason the cluster cannot be started here, or nothing.
slurm_cluster_missing() {
  local tool
  for tool in munged slurmctld slurmd sbatch scontrol scancel squeue sinfo; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (Debian packages slurm-wlm and munge)"; return; }
  done
  [[ $(id -u) -eq 0 ]] || echo "the daemons must be started as root"
}

slurm_cluster_stop() {
  local pid
  # Jobs first, so that no rank outlives the daemons (at most 30 s).
  if ((${#slurm_cluster_pids[@]})); then
    timeout 10 scancel --full --quiet "--user=$(id -un)" 2>/dev/null
    for _ in $(seq 150); do [[ -z $(timeout 5 squeue -h 2>/dev/null) ]] && break; sleep 0.2; done
  fi
  for pid in "${slurm_cluster_pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${slurm_cluster_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  slurm_cluster_pids=()
}

slurm_cluster_start() {
  local dir=$1 host cpus memory_mb port
  host=$(hostname -s)
  cpus=$(nproc)
  memory_mb=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024))
  port=$((20000 + $$ % 20000))
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"

  # munged refuses keys that others may read. It runs as root, like every client here
  # (the daemons, sbatch, the jobs): as the munge user it could not even reach its files
  # when a folder above DIR is private (mktemp's 700, as CI's TMPDIR is), and --force lets
  # it serve a socket that only root can reach.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=128 count=1 status=none
  chmod 700 "$dir/munge"
  chmod 400 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" || return 1
  slurm_cluster_pids+=("$(cat "$dir/munge/munged.pid")")

  local mpi=none
  if compgen -G "/usr/lib/*/slurm-wlm/mpi_pmix.so" >/dev/null; then mpi=pmix; fi
  # cred_expire: a requeued job waits this long (default 120 s) before it may start again.
  cat >"$dir/slurm.conf" <<CONF
ClusterName=spiptest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket,cred_expire=5
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
MpiDefault=$mpi
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
MinJobAge=5
ReturnToService=2
NodeName=$host CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf SLURM_CLUSTER_MPI=$mpi
  slurmctld -D >"$dir/slurmctld.out" 2>&1 &
  slurm_cluster_pids+=($!)
  slurmd -D >"$dir/slurmd.out" 2>&1 &
  slurm_cluster_pids+=($!)
  for _ in $(seq 100); do
    [[ $(sinfo -h -o %t 2>/dev/null) == idle ]] && return 0
    sleep 0.3
  done
  echo "the test cluster did not come up; its logs:" >&2
  tail -n 20 "$dir"/*.log "$dir"/*.out >&2
  return 1
}
