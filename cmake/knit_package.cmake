# The Debian packages (CPack's DEB generator; `./knit package` configures with
# -DCMAKE_INSTALL_PREFIX=/usr and runs cpack). One package per install component, as
# Debian's library policy splits them, so a program linked against libknit.so pulls in the
# library alone and a server host needs no headers:
#   knit-server  (component server): /usr/bin/knit-server (libknit linked in statically),
#                the systemd unit and /etc/default/knit-server (a conffile)
#   libknit0.1   (component lib): libknit.so.0.1 -> libknit.so.0.1.0; the name follows the
#                soname, so a new ABI installs beside the old one
#   libknit-dev  (component dev): headers, libknit.a, the libknit.so link, the CMake
#                package and the pkg-config files; depends on libknit0.1 of the same version
# Each carries /usr/share/doc/<package>/copyright and changelog.gz (packaging/); knit-server
# also knit-server(1).
# Included from the top level after every install rule.
set(KNIT_DEB_SERVER knit-server)
set(KNIT_DEB_LIB libknit${KNIT_SOVERSION})
set(KNIT_DEB_DEV libknit-dev)

# packaging/changelog, compressed as Debian wants it: gzip -9, no name or time stamp.
set(knit_changelog_gz ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging)
execute_process(COMMAND gzip -9 -n -c ${PROJECT_SOURCE_DIR}/packaging/changelog
                OUTPUT_FILE ${knit_changelog_gz} RESULT_VARIABLE knit_gzip_failed)
if(knit_gzip_failed)
  message(FATAL_ERROR "knit: gzip of packaging/changelog failed")
endif()
# knit-server(1), compressed the same way.
set(knit_man_gz ${PROJECT_BINARY_DIR}/packaging/knit-server.1.gz)
execute_process(COMMAND gzip -9 -n -c ${PROJECT_SOURCE_DIR}/packaging/knit-server.1
                OUTPUT_FILE ${knit_man_gz} RESULT_VARIABLE knit_gzip_failed)
if(knit_gzip_failed)
  message(FATAL_ERROR "knit: gzip of packaging/knit-server.1 failed")
endif()
install(FILES ${knit_man_gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT server
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
foreach(component server lib dev)
  string(TOUPPER ${component} upper)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright ${knit_changelog_gz}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${KNIT_DEB_${upper}} COMPONENT ${component}
          PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME knit)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the knit maintainers")
set(CPACK_PACKAGE_CONTACT "knit maintainers <maintainers@users.noreply.a-seed-ad749288.example>")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server lib dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)   # Depends from dpkg-shlibdeps
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${CPACK_PACKAGE_CONTACT})

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME ${KNIT_DEB_SERVER})
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION httpd)
set(CPACK_DEBIAN_SERVER_DESCRIPTION "HTTP server that offloads its heavy routes to a worker pool
knit-server serves GET /ping on its event loop and runs POST /ssr (HTML
rendering) and POST /jwt (token signing) on a knit pool of worker threads,
with admission control (503 + Retry-After), stuck-call detection (504) and a
bounded graceful stop on SIGTERM. It runs as the systemd service
knit-server.service, configured in /etc/default/knit-server.")
# The unit's enable/start/stop (packaging/postinst, prerm, postrm), and the conffile list.
configure_file(${PROJECT_SOURCE_DIR}/packaging/conffiles.in ${PROJECT_BINARY_DIR}/packaging/conffiles
               @ONLY)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm
    ${PROJECT_SOURCE_DIR}/packaging/postrm ${PROJECT_BINARY_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME ${KNIT_DEB_LIB})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_DESCRIPTION "worker pool that keeps an event loop fast (shared library)
knit hands the expensive minority of an event loop's work to worker threads
through lock-free rings and delivers the results back on the loop's thread.
Parked workers cost no CPU, wake-ups cannot be lost, calls have deadlines,
cancellation and stuck detection, and shutdown is bounded.

This package holds the shared library, libknit.so.${KNIT_SOVERSION}.")
# shlibs (dpkg-shlibdeps maps libknit.so.0.1 to this package, at this exact version: 0.x
# makes no ABI promise across versions) and the ldconfig trigger. Written here, not by
# CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS, which would call ldconfig from maintainer scripts.
file(WRITE ${PROJECT_BINARY_DIR}/packaging/shlibs
     "libknit ${KNIT_SOVERSION} ${KNIT_DEB_LIB} (= ${PROJECT_VERSION})\n")
file(WRITE ${PROJECT_BINARY_DIR}/packaging/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/packaging/shlibs ${PROJECT_BINARY_DIR}/packaging/triggers)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${KNIT_DEB_DEV})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${KNIT_DEB_LIB} (= ${PROJECT_VERSION}), libseccomp-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "libboost1.81-dev, pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION "worker pool that keeps an event loop fast (development files)
knit hands the expensive minority of an event loop's work to worker threads
through lock-free rings and delivers the results back on the loop's thread.

This package holds the C++20 headers, the static library libknit.a, the
libknit.so link, the CMake package (find_package(knit): knit::knit static,
knit::knit_shared shared, knit::asio / knit::asio_shared for Boost.Asio) and
the pkg-config files knit.pc (static) and knit-shared.pc (shared).")

include(CPack)
