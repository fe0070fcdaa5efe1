# `cmake --install build --prefix P`: the programs in P/bin, the demo configuration with
# its sample, the Slurm scripts in P/share/spip, the docs in P/share/doc/spip. The
# installed demo configuration and Slurm scripts name this installation's paths
# (SpipInstallPaths.cmake, run at install time, when the prefix is known).
include(GNUInstallDirs)

install(TARGETS spip spip-simulate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/quicklook.py DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/oskar_small.ms DESTINATION ${CMAKE_INSTALL_DATADIR}/spip/data)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/architecture.md
              ${PROJECT_SOURCE_DIR}/docs/benchmarks.md ${PROJECT_SOURCE_DIR}/docs/cluster.md
              ${PROJECT_SOURCE_DIR}/docs/config.md ${PROJECT_SOURCE_DIR}/docs/products.md
              ${PROJECT_SOURCE_DIR}/docs/scaling.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(CODE "set(SPIP_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
set(SPIP_STAGING_DIR \"${PROJECT_BINARY_DIR}/install-staging\")
set(SPIP_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
set(SPIP_DATADIR \"${CMAKE_INSTALL_DATADIR}\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/SpipInstallPaths.cmake)
