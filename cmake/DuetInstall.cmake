# `cmake --install` puts libduet, its headers (as duet/LAYER/*.h) and duetConfig.cmake in place,
# so outside projects use find_package(duet) and link duet::duet, and the `duet` command line in
# bin/.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Installed binaries find libduet beside them ($ORIGIN/../lib) and the libraries they were linked
# with outside the system's directories (CUDA's, say) without LD_LIBRARY_PATH.
set_target_properties(duet duet_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
                                               INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS duet EXPORT duetTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS duet_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(layer IN LISTS DUET_LAYERS)
  install(DIRECTORY ${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/duet/${layer}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES duet.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/duet)
install(EXPORT duetTargets NAMESPACE duet:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/duet)
configure_package_config_file(cmake/duetConfig.cmake.in ${PROJECT_BINARY_DIR}/duetConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/duet)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/duetConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/duetConfig.cmake ${PROJECT_BINARY_DIR}/duetConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/duet)
