# Install rules: headers, the libraries, exported targets knit::knit and knit::asio (static)
# and knit::knit_shared and knit::asio_shared (libknit.so), knitConfig.cmake +
# knitConfigVersion.cmake, knit.pc and knit-shared.pc. Included from the top level.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KNIT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/knit CACHE STRING "Where knitConfig.cmake is installed")

# Components (the Debian packages of cmake/knit_package.cmake): `lib` is the shared library's
# versioned file and soname link, what a program linked against it needs at run time;
# `dev` is everything a build needs (headers, libknit.a, the libknit.so link, CMake and
# pkg-config files); `server` is knit-server and its systemd unit (server/CMakeLists.txt).
set(knit_installed_targets knit knit_asio)
if(KNIT_BUILD_SHARED)
  list(APPEND knit_installed_targets knit_shared knit_asio_shared)
endif()
install(TARGETS ${knit_installed_targets} EXPORT knit_targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT lib
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/knit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT dev FILES_MATCHING PATTERN "*.hpp")
install(EXPORT knit_targets NAMESPACE knit:: FILE knitTargets.cmake
  DESTINATION ${KNIT_INSTALL_CMAKEDIR} COMPONENT dev)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/knitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/knitConfig.cmake INSTALL_DESTINATION ${KNIT_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/knitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
# knit.pc finds the prefix from its own place, so `cmake --install --prefix` may move it.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(KNIT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH KNIT_PC_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  string(REGEX REPLACE "/$" "" KNIT_PC_PREFIX "${KNIT_PC_PREFIX}")
  set(KNIT_PC_PREFIX "\${pcfiledir}/${KNIT_PC_PREFIX}")
endif()
# knit.pc links libknit.a (as knit::knit), knit-shared.pc libknit.so (as knit::knit_shared).
set(knit_pc_files ${PROJECT_BINARY_DIR}/knit.pc)
configure_file(${CMAKE_CURRENT_LIST_DIR}/knit.pc.in ${PROJECT_BINARY_DIR}/knit.pc @ONLY)
if(KNIT_BUILD_SHARED)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/knit-shared.pc.in ${PROJECT_BINARY_DIR}/knit-shared.pc
    @ONLY)
  list(APPEND knit_pc_files ${PROJECT_BINARY_DIR}/knit-shared.pc)
endif()
install(FILES ${PROJECT_BINARY_DIR}/knitConfig.cmake ${PROJECT_BINARY_DIR}/knitConfigVersion.cmake
  DESTINATION ${KNIT_INSTALL_CMAKEDIR} COMPONENT dev)
install(FILES ${knit_pc_files} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
