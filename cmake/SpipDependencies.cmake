# Finds the Debian packages spip builds against. Debian's casacore ships no CMake
# config, so its headers and libraries are located by hand.
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(PkgConfig REQUIRED)

pkg_check_modules(CFITSIO REQUIRED IMPORTED_TARGET cfitsio)

find_path(FFTW_INCLUDE_DIR fftw3.h REQUIRED)
find_library(FFTW_FLOAT_LIB fftw3f REQUIRED)
find_library(FFTW_DOUBLE_LIB fftw3 REQUIRED)
add_library(spip_fftw INTERFACE)
target_include_directories(spip_fftw SYSTEM INTERFACE ${FFTW_INCLUDE_DIR})
target_link_libraries(spip_fftw INTERFACE ${FFTW_FLOAT_LIB} ${FFTW_DOUBLE_LIB})

find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas REQUIRED)
find_library(OPENBLAS_LIB openblas REQUIRED)
add_library(spip_blas INTERFACE)
target_include_directories(spip_blas SYSTEM INTERFACE ${CBLAS_INCLUDE_DIR})
target_link_libraries(spip_blas INTERFACE ${OPENBLAS_LIB})

find_path(CASACORE_INCLUDE_DIR casacore/casa/aips.h REQUIRED)
set(_casa_libs casa_ms casa_measures casa_tables casa_scimath casa_scimath_f casa_casa)
set(CASACORE_LIBRARIES)
foreach(lib IN LISTS _casa_libs)
  find_library(CASACORE_${lib} ${lib} REQUIRED)
  list(APPEND CASACORE_LIBRARIES ${CASACORE_${lib}})
endforeach()
add_library(spip_casacore INTERFACE)
target_include_directories(spip_casacore SYSTEM INTERFACE ${CASACORE_INCLUDE_DIR} ${CASACORE_INCLUDE_DIR}/casacore)
target_link_libraries(spip_casacore INTERFACE ${CASACORE_LIBRARIES})
