# Sourced: Open MPI refuses root without these, and more ranks than cores without --oversubscribe.
SPIP_MPIRUN_FLAGS=(--oversubscribe)
if [[ $(id -u) -eq 0 ]]; then SPIP_MPIRUN_FLAGS+=(--allow-run-as-root); fi
