# Install rules, the CMake package (find_package(crossfree CONFIG)), the
# pkg-config file and the Debian package (cpack -G DEB).
#   bin/                       crossfree, rpc-bench, rpc-server, rpc-client,
#                              protoc-gen-crossfree-rpc
#   lib/crossfree/             libcrossfree-trace.so (crossfree record looks
#                              in <bin>/../lib/crossfree/)
#   <libdir>/                  static crossfree_rpc, crossfree_format(_writer)
#   include/crossfree/{rpc,format}/  the public headers (below), nothing else:
#                              consumers write <crossfree/rpc/messenger.h>;
#                              not include/rpc/, which glibc's libc6-dev uses
#   <libdir>/cmake/crossfree/  the package config; <libdir>/pkgconfig/crossfree.pc
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Build-tree include directories become include/ once installed, plus
# include/crossfree/ because the installed headers (and the code the protoc
# plugin generates) name each other the way the source tree does,
# "rpc/status.h"; consumers name them <crossfree/rpc/...>.
foreach(t crossfree_rpc crossfree_format_writer)
  get_target_property(_dirs ${t} INTERFACE_INCLUDE_DIRECTORIES)
  list(TRANSFORM _dirs REPLACE "^(.+)$" "$<BUILD_INTERFACE:\\1>")
  set_property(TARGET ${t} PROPERTY INTERFACE_INCLUDE_DIRECTORIES
               ${_dirs} "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>"
               "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/crossfree>")
endforeach()
set_target_properties(crossfree_rpc PROPERTIES EXPORT_NAME rpc)
set_target_properties(crossfree_format PROPERTIES EXPORT_NAME format)
set_target_properties(crossfree_format_writer PROPERTIES EXPORT_NAME format_writer)
set_target_properties(crossfree_libev PROPERTIES EXPORT_NAME libev)

install(TARGETS crossfree rpc-server rpc-client RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET rpc-bench)
  install(TARGETS rpc-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(TARGETS crossfree-trace LIBRARY DESTINATION lib/crossfree)
install(TARGETS crossfree_rpc crossfree_format crossfree_format_writer crossfree_libev
                protoc-gen-crossfree-rpc
        EXPORT crossfreeTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The headers a program of another project includes: for the RPC core, a
# server (Messenger with its options and ServicePoolOptions), a client (Proxy,
# RpcController) and the code protoc-gen-crossfree-rpc generates (proxy.h,
# rpc_context.h, service_if.h); for the trace reader, TraceReader and the
# format's names. Beside them the few public types those name (RemoteMethod,
# ResponseCallback and its InlineFunction, InPlace), and nothing else: the
# public classes keep the core's internals behind forward declarations and
# in-place storage (messenger.h, rpc_controller.h, proxy.h), so the reactor,
# connections, calls, pools, the test service, contract checks, logging, the
# trace writer and the tracer's protocol stay in the source tree.
# tests/install/install_test.sh fails if the installed set differs from the
# one it expects, or if an installed header includes one that is not
# installed; the consumer compiles each installed header alone.
set(_rpc_public_headers messenger.h service_pool_options.h service_if.h rpc_context.h proxy.h
    rpc_controller.h remote_method.h response_callback.h inline_function.h in_place.h
    status.h sockaddr.h)
set(_format_public_headers trace_reader.h trace_format.h names.h)
set(_include_dir ${CMAKE_INSTALL_INCLUDEDIR}/crossfree)
# The package names the public ones as a program includes them
# (crossfree_PUBLIC_HEADERS: crossfree/rpc/messenger.h, ...).
list(TRANSFORM _rpc_public_headers PREPEND crossfree/rpc/ OUTPUT_VARIABLE _rpc_names)
list(TRANSFORM _format_public_headers PREPEND crossfree/format/ OUTPUT_VARIABLE _format_names)
set(CROSSFREE_PUBLIC_HEADERS ${_rpc_names} ${_format_names})
list(TRANSFORM _rpc_public_headers PREPEND ${PROJECT_SOURCE_DIR}/rpc/)
list(TRANSFORM _format_public_headers PREPEND ${PROJECT_SOURCE_DIR}/format/)
# rpc_header.proto: the wire's headers, for clients written against the
# protocol rather than this library.
install(FILES ${_rpc_public_headers}
              ${PROJECT_BINARY_DIR}/rpc/rpc_header.pb.h ${PROJECT_SOURCE_DIR}/rpc/rpc_header.proto
        DESTINATION ${_include_dir}/rpc)
install(FILES ${_format_public_headers} DESTINATION ${_include_dir}/format)
install(FILES ${PROJECT_BINARY_DIR}/crossfree_version.h DESTINATION ${_include_dir})

set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/crossfree)
install(EXPORT crossfreeTargets NAMESPACE crossfree:: DESTINATION ${_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/crossfreeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/crossfreeConfig.cmake INSTALL_DESTINATION ${_cmake_dir}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/crossfreeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/crossfreeConfig.cmake
              ${PROJECT_BINARY_DIR}/crossfreeConfigVersion.cmake DESTINATION ${_cmake_dir})
# The .pc file uses ${pcfiledir} so that it holds for any --prefix.
file(RELATIVE_PATH CROSSFREE_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/crossfree.pc.in ${PROJECT_BINARY_DIR}/crossfree.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/crossfree.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB: runtime dependencies from dpkg-shlibdeps.
set(CPACK_PACKAGE_NAME crossfree)
set(CPACK_PACKAGE_VENDOR "crossfree")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Find objects allocated on one thread and freed on another")
set(CPACK_PACKAGE_CONTACT "crossfree maintainers <crossfree@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The static trace reader (crossfree::format) needs -lzstd in consumers.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libzstd-dev")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
include(CPack)
