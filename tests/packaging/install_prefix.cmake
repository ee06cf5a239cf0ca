# Fixture of the consumer tests: installs the build tree into STAGE, then moves
# the whole tree to PREFIX, so that every consumer test also checks that the
# installed package is relocatable (nothing may point back into STAGE).
# Variables: BUILD_DIR, STAGE, PREFIX.
include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
file(REMOVE_RECURSE "${STAGE}" "${PREFIX}")
run_checked("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${STAGE}")
get_filename_component(parent "${PREFIX}" DIRECTORY)
file(MAKE_DIRECTORY "${parent}")
file(RENAME "${STAGE}" "${PREFIX}")
message(STATUS "installed, then moved to ${PREFIX}")
