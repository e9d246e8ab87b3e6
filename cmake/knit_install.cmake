# Install rules: headers, the library, exported targets knit::knit and knit::asio,
# knitConfig.cmake + knitConfigVersion.cmake, and knit.pc. Included from the top level.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KNIT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/knit CACHE STRING "Where knitConfig.cmake is installed")

install(TARGETS knit knit_asio EXPORT knit_targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/knit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")
install(EXPORT knit_targets NAMESPACE knit:: FILE knitTargets.cmake DESTINATION ${KNIT_INSTALL_CMAKEDIR})

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
configure_file(${CMAKE_CURRENT_LIST_DIR}/knit.pc.in ${PROJECT_BINARY_DIR}/knit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/knitConfig.cmake ${PROJECT_BINARY_DIR}/knitConfigVersion.cmake
  DESTINATION ${KNIT_INSTALL_CMAKEDIR})
install(FILES ${PROJECT_BINARY_DIR}/knit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
