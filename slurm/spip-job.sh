#!/usr/bin/env bash
# The body of every bundled sbatch script: run spip on the allocation, pass Slurm's
# time-limit warning on to it, and requeue the job when spip stopped early.
#   slurm/spip-job.sh CONFIG OUTPUT_DIR [more spip options]
# Environment:
#   SPIP_BIN           the spip program (default: spip on PATH, else this checkout's build)
#   SPIP_LAUNCHER      srun (PMIx, the default) or mpirun (sites without PMIx)
#   SPIP_MAX_RESTARTS  requeues before giving up (default 20)
#   SPIP_WARNING_S     seconds between Slurm's warning and the limit (the sbatch
#                      scripts set it to match their --signal=B:USR1@SECONDS)
set -uo pipefail

if (($# < 2)); then
  echo "usage: sbatch slurm/<script>.sbatch CONFIG OUTPUT_DIR [spip options]" >&2
  exit 2
fi
if [[ -z ${SLURM_JOB_ID:-} ]]; then
  echo "spip-job.sh: run it through sbatch (slurm/one-node.sbatch, multi-node.sbatch or multi-node-gpu.sbatch):" \
       "SLURM_JOB_ID is not set" >&2
  exit 2
fi
config=$1 out=$2
shift 2
bin=${SPIP_BIN:-$(command -v spip || echo "$(cd "$(dirname "$0")/.." && pwd)/build/src/app/spip")}
launcher=${SPIP_LAUNCHER:-srun}
max_restarts=${SPIP_MAX_RESTARTS:-20}
restarts=${SLURM_RESTART_COUNT:-0}
resumable=75  # spip's exit code for "stopped early, resume with the same command"

# Slurm's warning (--signal=B:USR1@SECONDS) reaches this shell only: pass it on. Each
# rank then finishes its channel, and all exit with the resumable code. A TERM that no
# warning came before is scancel (or an administrator): spip stops the same way and
# keeps its progress, but the job is not requeued.
# The traps come first: a warning before them would end this shell, and the job.
launcher_pid= ignore_warning=0
interrupted=0 warned=0 cancelled=0
trap 'interrupted=1 warned=1
      if ((ignore_warning)); then
        echo "spip job $SLURM_JOB_ID: time-limit warning; not passed on, the allocation is shorter than it"
      else
        echo "spip job $SLURM_JOB_ID: time-limit warning; asking spip to stop at its next resumable point"
        [[ -n $launcher_pid ]] && kill -USR1 "$launcher_pid"
      fi' USR1
trap 'interrupted=1; ((warned)) || cancelled=1
      echo "spip job $SLURM_JOB_ID: terminated; asking spip to stop at its next resumable point"
      [[ -n $launcher_pid ]] && kill -USR1 "$launcher_pid"' TERM

# Seconds left in this allocation before the warning, from squeue's [D-]HH:MM:SS (none
# when unlimited): spip refuses to start a run that could never finish in them. A
# limit shorter than the warning (a debug queue's ten minutes) leaves nothing after it:
# spip gets the whole allocation rather than a second, and the warning, which then
# comes at once (before spip could take it, whose ranks it would kill), is not passed
# on. The TERM at the limit stops spip instead: the job is requeued where spip leaves
# within Slurm's KillWait (30 s by default), else it ends at the limit with what its
# last checkpoint marked, and the same command resumes from there.
limit=
if [[ $(squeue -h -j "$SLURM_JOB_ID" -o %L 2>/dev/null) =~ ^(([0-9]+)-)?(([0-9]+):)?([0-9]+):([0-9]+)$ ]]; then
  total=$((((10#${BASH_REMATCH[2]:-0} * 24 + 10#${BASH_REMATCH[4]:-0}) * 60 + 10#${BASH_REMATCH[5]}) * 60 + 10#${BASH_REMATCH[6]}))
  limit=$((total - ${SPIP_WARNING_S:-0}))
  if ((limit < 60)); then
    echo "spip job $SLURM_JOB_ID: ${total} s left, less than a minute beyond the warning's ${SPIP_WARNING_S:-0} s:" \
         "spip plans with all of it, and the warning is not passed on" >&2
    limit=$total ignore_warning=1
  fi
  limit=$((limit > 1 ? limit : 1))
fi
threads=${SLURM_CPUS_PER_TASK:-1}

# The options this script gives spip, less those the user gave after OUTPUT_DIR (spip
# takes each key once).
given() {
  local option
  for option in "${@:2}"; do [[ $option == "$1" || $option == "$1="* ]] && return 0; done
  return 1
}
options=(--config "$config")
given --output.dir "$@" || options+=(--output.dir "$out")
given --parallel.threads "$@" || options+=(--parallel.threads "$threads")
if [[ -n $limit ]] && ! given --parallel.time_limit "$@"; then options+=(--parallel.time_limit "$limit"); fi

export OMP_NUM_THREADS=$threads OMP_PLACES=cores OMP_PROC_BIND=close
log=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/^ *StdOut=//p')
echo "spip job $SLURM_JOB_ID, start $((restarts + 1)): $SLURM_NTASKS rank(s) on $SLURM_JOB_NUM_NODES node(s)" \
     "($SLURM_JOB_NODELIST), $threads OpenMP thread(s) each, launched by $launcher"
echo "spip job $SLURM_JOB_ID: config $config; products in $out; log in ${log:-the job output file};" \
     "time left ${limit:-unlimited} s"

case $launcher in
  srun)
    # -c: from Slurm 22.05 to 23.02 srun does not take --cpus-per-task from the job,
    # and would bind each rank and all its threads to one core.
    srun --mpi=pmix --cpu-bind=cores --cpus-per-task="$threads" "$bin" "${options[@]}" "$@" &
    ;;
  mpirun)
    # N ranks a node where the job asked for them so, the job's ranks in all at most
    # (--ntasks that does not fill the last node); else the job's ranks in all, over
    # the slots Slurm gave each node (ppr:SLURM_NTASKS:node would start that many on each).
    if [[ -n ${SLURM_NTASKS_PER_NODE:-} ]]; then
      flags=(-q -np "$SLURM_NTASKS" --bind-to core --map-by "ppr:$SLURM_NTASKS_PER_NODE:node:PE=$threads")
    else
      flags=(-q -np "$SLURM_NTASKS" --bind-to core --map-by "slot:PE=$threads")
    fi
    if [[ $(id -u) -eq 0 ]]; then flags+=(--allow-run-as-root); fi
    mpirun "${flags[@]}" "$bin" "${options[@]}" "$@" &
    ;;
  *)
    echo "spip job: SPIP_LAUNCHER must be srun or mpirun, not '$launcher'" >&2
    exit 2
    ;;
esac
launcher_pid=$!

# A trapped signal ends `wait` early (128 + its number) while the ranks run on: wait
# again. Once `wait` has reported the launcher's status, another says 127: keep the status.
status=0
while :; do
  interrupted=0
  wait "$launcher_pid"
  code=$?
  ((code == 127)) && break
  status=$code
  ((interrupted)) || break
done

if ((status == resumable && cancelled)); then
  echo "spip job $SLURM_JOB_ID: terminated with no warning before (scancel, an administrator, or a preemption," \
       "which Slurm requeues itself where its PreemptMode says so); its progress is saved, and this script does not requeue it." \
       "Resume by submitting the same command again."
  exit "$status"
fi
if ((status == resumable)); then
  if ((restarts >= max_restarts)); then
    echo "spip job $SLURM_JOB_ID: stopped early $((restarts + 1)) times; not requeued (SPIP_MAX_RESTARTS=$max_restarts)." \
         "Resume by submitting the same command again."
    exit "$status"
  fi
  echo "spip job $SLURM_JOB_ID: stopped early with its progress saved; requeueing to resume"
  scontrol requeue "$SLURM_JOB_ID" && exit 0
  echo "spip job $SLURM_JOB_ID: requeue refused; resume by submitting the same command again" >&2
fi
if ((status == 0)); then
  echo "spip job $SLURM_JOB_ID: done; products in $out (see $out/*-qa.json), log in ${log:-the job output file}"
else
  echo "spip job $SLURM_JOB_ID: spip exited with $status; the log above says why" >&2
fi
exit "$status"
