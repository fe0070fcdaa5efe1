# Run by `cmake --install`: writes the demo configuration and the Slurm scripts with
# this installation's paths in place of the checkout's: the sample MS, the folder the
# sbatch scripts find spip-job.sh in, and the spip that spip-job.sh runs.
# SPIP_SOURCE_DIR, SPIP_BINDIR and SPIP_DATADIR come from SpipInstall.cmake.
set(share "${CMAKE_INSTALL_PREFIX}/${SPIP_DATADIR}/spip")
set(destination "$ENV{DESTDIR}${share}")

# Copies SOURCE to DESTINATION/NAME with FROM replaced by TO, and fails when FROM is not
# in it, so that an edited script cannot silently keep the checkout's path.
function(spip_install_rewritten source name from to)
  file(READ "${source}" text)
  string(FIND "${text}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${source} no longer holds '${from}': update cmake/SpipInstallPaths.cmake")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
  get_filename_component(folder "${destination}/${name}" DIRECTORY)
  file(MAKE_DIRECTORY "${folder}")
  file(WRITE "${destination}/${name}" "${text}")
  message(STATUS "Installing: ${destination}/${name}")
endfunction()

spip_install_rewritten("${SPIP_SOURCE_DIR}/configs/demo.cfg" configs/demo.cfg
  "ms = data/oskar_small.ms" "ms = ${share}/data/oskar_small.ms")
foreach(script one-node multi-node multi-node-gpu)
  spip_install_rewritten("${SPIP_SOURCE_DIR}/slurm/${script}.sbatch" slurm/${script}.sbatch
    "\${SPIP_HOME:-\$SLURM_SUBMIT_DIR}" "\${SPIP_HOME:-${share}}")
endforeach()
spip_install_rewritten("${SPIP_SOURCE_DIR}/slurm/spip-job.sh" slurm/spip-job.sh
  [[bin=${SPIP_BIN:-$(command -v spip || echo "$(cd "$(dirname "$0")/.." && pwd)/build/src/app/spip")}]]
  "bin=\${SPIP_BIN:-${CMAKE_INSTALL_PREFIX}/${SPIP_BINDIR}/spip}")
file(CHMOD "${destination}/slurm/spip-job.sh" "${destination}/slurm/one-node.sbatch"
     "${destination}/slurm/multi-node.sbatch" "${destination}/slurm/multi-node-gpu.sbatch"
     PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
