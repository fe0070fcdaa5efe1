#!/usr/bin/env bash
# The bundled sbatch script on a real (one-node) Slurm cluster, with 2 tasks on the
# sample: an uninterrupted job, then jobs warned of their time limit mid-run (srun,
# and the mpirun variant) that must stop, requeue themselves, resume and finish with
# products identical to the uninterrupted job's, and a job cancelled mid-run, which must
# not requeue itself.
#   test_slurm_job.sh SOURCE_DIR SPIP_BIN
# Everything goes into this test's own TMPDIR (fresh_tmpdir.sh makes it), which the
# daemons and the jobs (sbatch exports the environment) take as theirs.
# Exit 77 (skipped) only when Slurm or munge is not installed.
set -uo pipefail
source_dir=$1 spip_bin=$2 work=$TMPDIR/slurm_job
source "$source_dir/tests/slurm/slurm_cluster.sh"

reason=$(slurm_cluster_missing)
if [[ -n $reason ]]; then
  echo "skipped: $reason"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
trap slurm_cluster_stop EXIT
trap 'exit 1' INT TERM
slurm_cluster_start "$work/cluster" || exit 1
echo "cluster up: $(sinfo -h -o '%n %c CPUs %m MB %t') (MpiDefault=$SLURM_CLUSTER_MPI)"

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The sample at 256^2 with 121 depths: about 10 s on 2 ranks of this machine. Each
# channel is marked as soon as it is written, so that a job can be warned mid-run.
options=(--input.ms "$source_dir/data/oskar_small.ms" --image.size 256 --faraday.dphi 1
  --output.checkpoint_interval 0)
launcher=srun
[[ $SLURM_CLUSTER_MPI == pmix ]] || launcher=mpirun

# submit NAME LAUNCHER [SBATCH OPTIONS]: sbatch --wait in the background; sets job_pid,
# job_out, job_log.
submit() {
  job_out=$work/$1 job_log=$work/$1.log
  (cd "$source_dir" && SPIP_BIN=$spip_bin SPIP_LAUNCHER=$2 \
    sbatch --wait --parsable --ntasks=2 --cpus-per-task=1 --output="$job_log" "${@:3}" \
    slurm/one-node.sbatch configs/demo.cfg "$job_out" "${options[@]}" >"$work/$1.sbatch" 2>&1) &
  job_pid=$!
}

# The job's record in the completion log (accounting is off on this cluster).
final_state() { grep "^JobId=$1 " "$work/cluster/jobcomp.txt" | tail -n 1 | grep -o 'JobState=[A-Z]* .*ExitCode=[0-9:]*' ; }

check_products() {  # NAME OUT LOG SBATCH_STATUS
  local products
  (($4 == 0)) || fail "$1: sbatch --wait exited with $4"
  products=$(ls "$2"/*.fits 2>/dev/null | wc -l)
  ((products >= 50)) || fail "$1: $products FITS products in $2, expected at least 50"
  [[ -f $2/demo-qa.json ]] || fail "$1: no qa.json"
  [[ ! -e $2/.demo.progress ]] || fail "$1: progress markers left behind"
  grep -q "on 2 rank(s)" "$3" || fail "$1: spip did not run on 2 ranks"
  grep -q "against parallel.time_limit" "$3" || fail "$1: the job's time left did not reach spip"
  grep -q "spip job .*: done; products in $2" "$3" || fail "$1: the script did not report its products"
}

# 1. Uninterrupted.
submit reference "$launcher"
wait "$job_pid"
status=$?
job=$(cat "$work/reference.sbatch" | tail -n 1)
echo "reference job $job: sbatch --wait exited $status; $(final_state "$job")"
check_products reference "$job_out" "$job_log" "$status"
[[ $(final_state "$job") == *"JobState=COMPLETED"*"ExitCode=0:0"* ]] || fail "reference: job not COMPLETED with 0:0"
reference=$job_out

# wait_for_markers COUNT: until the submitted job has left COUNT channel markers (or a
# minute has passed); sets markers.
wait_for_markers() {
  markers=0
  for _ in $(seq 600); do
    markers=$(cat "$job_out"/.demo.progress/rank-*.jsonl 2>/dev/null | grep -c '"record":')
    ((markers >= $1)) && break
    sleep 0.1
  done
}

# 2. Warned mid-run as --signal=B:USR1@... would, then requeued and resumed.
interrupted_job() {  # NAME LAUNCHER
  submit "$1" "$2"
  local job=""
  wait_for_markers 4
  job=$(squeue -h -o %i | head -n 1)
  [[ -n $job ]] || { fail "$1: no running job to warn"; wait "$job_pid"; return; }
  scancel --batch --signal=USR1 "$job"
  wait "$job_pid"
  local status=$?
  echo "$1 job $job ($2): warned after $markers channel markers; sbatch --wait exited $status; $(final_state "$job")"
  check_products "$1" "$job_out" "$job_log" "$status"
  grep -q "received SIGUSR1" "$job_log" || fail "$1: spip did not receive the warning"
  grep -q "requeueing to resume" "$job_log" || fail "$1: the script did not requeue the job"
  grep -q "start 2:" "$job_log" || fail "$1: the job did not start again"
  grep -q "resuming:" "$job_log" || fail "$1: the second start did not resume"
  [[ $(final_state "$job") == *"JobState=COMPLETED"*"ExitCode=0:0"* ]] || fail "$1: job not COMPLETED with 0:0"
  python3 - "$reference" "$job_out" <<'PY' || fail "$1: products differ from the uninterrupted job's"
import sys, glob, os
import numpy as np
from astropy.io import fits
reference, other = sys.argv[1:]
paths = sorted(glob.glob(os.path.join(reference, "*.fits")))


def same(a, b):
    # Images and cubes, or the catalogue's table column by column.
    a, b = fits.getdata(a), fits.getdata(b)
    if a.dtype.names is None:
        return np.array_equal(a, b, equal_nan=True)
    return a.dtype == b.dtype and all(
        np.array_equal(a[n], b[n], equal_nan=a[n].dtype.kind == "f") for n in a.dtype.names)


differ = [os.path.basename(p) for p in paths if not same(p, os.path.join(other, os.path.basename(p)))]
print(f"{len(paths) - len(differ)} of {len(paths)} FITS products identical to the uninterrupted job's")
sys.exit(1 if differ or not paths else 0)
PY
}
interrupted_job warned "$launcher"
if [[ $launcher == srun ]]; then interrupted_job warned-mpirun mpirun; fi

# 3. Cancelled mid-run (scancel: TERM without a warning before it): not requeued.
submit cancelled "$launcher"
wait_for_markers 2
job=$(squeue -h -o %i | head -n 1)
if [[ -z $job ]]; then
  fail "cancelled: no running job to cancel"
else
  scancel "$job"
  wait "$job_pid"
  for _ in $(seq 100); do [[ -n $(final_state "$job") ]] && break; sleep 0.2; done
  sleep 3  # a requeued job would be pending again by now
  echo "cancelled job $job: cancelled after $markers channel markers; $(final_state "$job")"
  if grep -q "requeueing to resume" "$job_log"; then fail "cancelled: the script requeued a cancelled job"; fi
  [[ -z $(squeue -h -j "$job" -o %i 2>/dev/null) ]] || fail "cancelled: the job is queued again"
  [[ $(final_state "$job") == *"JobState=CANCELLED"* ]] || fail "cancelled: job not CANCELLED"
fi

# 4. A limit shorter than the warning (a debug queue's): Slurm sends the warning within
# its 30 s check of the start. Sent here once spip runs, the script keeps it from the
# ranks (which would stop at once, and at every start after), and the job completes.
submit short "$launcher" --time=2
job=""
for _ in $(seq 600); do
  grep -q "^\[spip 0/2 " "$job_log" 2>/dev/null && job=$(squeue -h -t RUNNING -o %i | head -n 1)
  [[ -n $job ]] && break
  sleep 0.1
done
if [[ -n $job ]]; then scancel --batch --signal=USR1 "$job"; else fail "short: spip never ran"; fi
wait "$job_pid"
status=$?
job=$(tail -n 1 "$work/short.sbatch")
echo "short job $job (--time=2, warning at 600 s): sbatch --wait exited $status; $(final_state "$job")"
check_products short "$job_out" "$job_log" "$status"
grep -q "the warning is not passed on" "$job_log" || fail "short: the script did not say it keeps the warning back"
grep -q "time-limit warning; not passed on" "$job_log" || fail "short: no warning came while the job ran"
[[ $(final_state "$job") == *"JobState=COMPLETED"*"ExitCode=0:0"* ]] || fail "short: job not COMPLETED with 0:0"

slurm_cluster_stop  # before its folder goes: the daemons keep their sockets and state there
if ((failures)); then
  echo "the job logs are in $work"
  exit 1
fi
rm -rf "$work"
echo "passed"
