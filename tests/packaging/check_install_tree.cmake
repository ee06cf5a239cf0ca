# The install tree: every file in place, the shared library as a real file with
# its SONAME and development symlinks, and no absolute path of the source,
# build or staging tree in the package files (they must stay relocatable).
# With HDF5 support (HDF5=ON) the shared library calls into libhdf5 (HDF5
# files as containers) and depends on it, and the package files name it for
# static links; without HDF5 support none of them names it.
# Variables: PREFIX, STAGE, SOURCE_DIR, LIBDIR, INCLUDEDIR, CMAKEDIR, PCDIR,
# SHARED_FILE, SONAME, READELF, HDF5.
include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")

set(lib "${PREFIX}/${LIBDIR}")
foreach(f "${INCLUDEDIR}/n5.h" "${LIBDIR}/${SHARED_FILE}" "${LIBDIR}/libn5.a"
          "${PCDIR}/n5.pc" "${CMAKEDIR}/n5Config.cmake" "${CMAKEDIR}/n5ConfigVersion.cmake"
          "${CMAKEDIR}/n5Targets.cmake")
  if(NOT EXISTS "${PREFIX}/${f}" OR IS_SYMLINK "${PREFIX}/${f}")
    message(FATAL_ERROR "${f} is missing or a symlink in the install tree")
  endif()
endforeach()
foreach(link "${SONAME}" libn5.so)
  if(NOT IS_SYMLINK "${lib}/${link}")
    message(FATAL_ERROR "${LIBDIR}/${link} is not a symlink")
  endif()
  file(READ_SYMLINK "${lib}/${link}" target)
  if(NOT target STREQUAL SHARED_FILE)
    message(FATAL_ERROR "${LIBDIR}/${link} -> ${target}, expected ${SHARED_FILE}")
  endif()
endforeach()

elf_dynamic("${lib}/${SHARED_FILE}" needed soname)
if(NOT soname STREQUAL SONAME)
  message(FATAL_ERROR "installed ${SHARED_FILE} has SONAME '${soname}', expected ${SONAME}")
endif()

set(hdf5_needed "")
foreach(n IN LISTS needed)
  if(n MATCHES "^libhdf5")
    list(APPEND hdf5_needed "${n}")
  endif()
endforeach()
execute_process(COMMAND "${READELF}" --dyn-syms -W "${lib}/${SHARED_FILE}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE dynsyms ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf --dyn-syms failed: ${err}")
endif()
string(REGEX MATCHALL " UND H5[A-Za-z0-9_]*" hdf5_calls "${dynsyms}")
list(LENGTH hdf5_calls hdf5_calls)
file(STRINGS "${PREFIX}/${PCDIR}/n5.pc" libs_private REGEX "^Libs.private:")
file(READ "${PREFIX}/${CMAKEDIR}/n5Targets.cmake" targets)
string(FIND "${targets}" "hdf5" targets_hdf5)
if(HDF5)
  if(hdf5_calls EQUAL 0)
    message(FATAL_ERROR "built with HDF5 support, ${SHARED_FILE} calls no libhdf5 function")
  endif()
  if(NOT hdf5_needed)
    message(FATAL_ERROR "${SHARED_FILE} calls ${hdf5_calls} libhdf5 functions but does not NEED "
                        "libhdf5: ${needed}")
  endif()
  if(NOT libs_private MATCHES "-lhdf5( |$)")
    message(FATAL_ERROR "built with HDF5 support, n5.pc does not name libhdf5: ${libs_private}")
  endif()
  if(targets_hdf5 EQUAL -1)
    message(FATAL_ERROR "built with HDF5 support, n5Targets.cmake does not name libhdf5")
  endif()
  message(STATUS "HDF5 support: ${SHARED_FILE} calls ${hdf5_calls} libhdf5 functions, NEEDs "
                 "'${hdf5_needed}'; ${libs_private}")
else()
  if(hdf5_calls GREATER 0 OR hdf5_needed OR libs_private MATCHES "hdf5"
     OR NOT targets_hdf5 EQUAL -1)
    message(FATAL_ERROR "built without HDF5 support, the package still names libhdf5")
  endif()
endif()

file(READ "${SOURCE_DIR}/include/n5.h" source_header)
file(READ "${PREFIX}/${INCLUDEDIR}/n5.h" installed_header)
if(NOT source_header STREQUAL installed_header)
  message(FATAL_ERROR "the installed n5.h differs from include/n5.h")
endif()

foreach(f "${PCDIR}/n5.pc" "${CMAKEDIR}/n5Config.cmake" "${CMAKEDIR}/n5ConfigVersion.cmake"
          "${CMAKEDIR}/n5Targets.cmake")
  file(READ "${PREFIX}/${f}" text)
  foreach(path "${SOURCE_DIR}" "${STAGE}" "${PREFIX}")
    string(FIND "${text}" "${path}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} contains the absolute path ${path}")
    endif()
  endforeach()
endforeach()
file(STRINGS "${PREFIX}/${PCDIR}/n5.pc" prefix_line REGEX "^prefix=")
if(NOT prefix_line MATCHES "^prefix=\\\${pcfiledir}/")
  message(FATAL_ERROR "n5.pc is not relocatable: ${prefix_line}")
endif()
message(STATUS "install tree in ${PREFIX} is complete and relocatable")
