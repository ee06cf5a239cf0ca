# Configures, builds and runs tests/consumer-cmake against the installed prefix
# with find_package(n5 CONFIG REQUIRED), then checks the program's NEEDED entries.
# Variables: SOURCE_DIR (tests/consumer-cmake), WORK_DIR, PREFIX, LINK (shared,
# static or prefer_static), GENERATOR, MAKE_PROGRAM, C_COMPILER, READELF, SONAME,
# INCOMPATIBLE_VERSION (optional).
include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")

file(REMOVE_RECURSE "${WORK_DIR}")
set(args -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
    "-DCMAKE_C_COMPILER=${C_COMPILER}" -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_PREFIX_PATH=${PREFIX}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF "-DN5_CONSUMER_LINK=${LINK}")
if(MAKE_PROGRAM)
  list(APPEND args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(INCOMPATIBLE_VERSION)
  list(APPEND args "-DN5_INCOMPATIBLE_VERSION=${INCOMPATIBLE_VERSION}")
endif()
run_checked("${CMAKE_COMMAND}" ${args})

# The package must come from the installed prefix.
file(STRINGS "${WORK_DIR}/build/CMakeCache.txt" n5_dir REGEX "^n5_DIR:")
string(REGEX REPLACE "^n5_DIR:[A-Z]+=" "" n5_dir "${n5_dir}")
file(REAL_PATH "${n5_dir}" n5_dir)
file(REAL_PATH "${PREFIX}" prefix)
string(FIND "${n5_dir}/" "${prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "find_package(n5) found ${n5_dir}, not the package in ${prefix}")
endif()

run_checked("${CMAKE_COMMAND}" --build "${WORK_DIR}/build" --verbose)
set(exe "${WORK_DIR}/build/n5_consumer")
elf_dynamic("${exe}" needed soname)
message(STATUS "n5_consumer NEEDs: ${needed}")
if(LINK STREQUAL "shared")
  if(NOT SONAME IN_LIST needed)
    message(FATAL_ERROR "n5_consumer linked with n5::n5 does not NEED ${SONAME}")
  endif()
else()
  foreach(lib IN LISTS needed)
    if(lib MATCHES "^libn5")
      message(FATAL_ERROR "n5_consumer linked statically NEEDs ${lib}")
    endif()
  endforeach()
endif()
# No LD_LIBRARY_PATH: the shared build must find libn5 through its RPATH.
run_checked("${exe}" "${WORK_DIR}/container.n5")
