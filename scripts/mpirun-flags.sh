# Sourced: Open MPI refuses root without these, and more ranks than cores without
# --oversubscribe; -q leaves a failing run's one-line error without mpirun's banner.
SPIP_MPIRUN_FLAGS=(-q --oversubscribe)
if [[ $(id -u) -eq 0 ]]; then SPIP_MPIRUN_FLAGS+=(--allow-run-as-root); fi
