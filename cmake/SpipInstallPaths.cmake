# Run by `cmake --install`: installs the demo configuration and the Slurm scripts with
# this installation's paths in place of the checkout's: the sample MS, the folder the
# sbatch scripts find spip-job.sh in, and the spip that spip-job.sh runs. The rewritten
# copies are staged in the build tree and installed with file(INSTALL), which applies
# DESTDIR, sets their modes and lists them in install_manifest.txt.
# SPIP_SOURCE_DIR, SPIP_STAGING_DIR, SPIP_BINDIR and SPIP_DATADIR come from SpipInstall.cmake.
foreach(dir BINDIR DATADIR)
  if(IS_ABSOLUTE "${SPIP_${dir}}")
    set(full_${dir} "${SPIP_${dir}}")
  else()
    set(full_${dir} "${CMAKE_INSTALL_PREFIX}/${SPIP_${dir}}")
  endif()
endforeach()
set(share "${full_DATADIR}/spip")

# Stages SOURCE as NAME with FROM replaced by TO, and fails when FROM is not in it, so
# that an edited script cannot silently keep the checkout's path.
function(spip_stage_rewritten source name from to)
  file(READ "${source}" text)
  string(FIND "${text}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${source} no longer holds '${from}': update cmake/SpipInstallPaths.cmake")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
  file(WRITE "${SPIP_STAGING_DIR}/${name}" "${text}")
endfunction()

file(REMOVE_RECURSE "${SPIP_STAGING_DIR}")
spip_stage_rewritten("${SPIP_SOURCE_DIR}/configs/demo.cfg" configs/demo.cfg
  "ms = data/oskar_small.ms" "ms = ${share}/data/oskar_small.ms")
foreach(script one-node multi-node multi-node-gpu)
  spip_stage_rewritten("${SPIP_SOURCE_DIR}/slurm/${script}.sbatch" slurm/${script}.sbatch
    "\${SPIP_HOME:-\$SLURM_SUBMIT_DIR}" "\${SPIP_HOME:-${share}}")
endforeach()
spip_stage_rewritten("${SPIP_SOURCE_DIR}/slurm/spip-job.sh" slurm/spip-job.sh
  [[bin=${SPIP_BIN:-$(command -v spip || echo "$(cd "$(dirname "$0")/.." && pwd)/build/src/app/spip")}]]
  "bin=\${SPIP_BIN:-${full_BINDIR}/spip}")
file(INSTALL DESTINATION "${share}/configs" TYPE FILE FILES "${SPIP_STAGING_DIR}/configs/demo.cfg")
file(INSTALL DESTINATION "${share}/slurm" TYPE PROGRAM FILES
     "${SPIP_STAGING_DIR}/slurm/one-node.sbatch" "${SPIP_STAGING_DIR}/slurm/multi-node.sbatch"
     "${SPIP_STAGING_DIR}/slurm/multi-node-gpu.sbatch" "${SPIP_STAGING_DIR}/slurm/spip-job.sh")
