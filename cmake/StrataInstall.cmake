# `cmake --install`: libstrata (with its SONAME links), the public headers, the command-line
# programs, and what a host build finds the library by: a CMake package (find_package(strata),
# imported target strata::strata) and a pkg-config file (strata.pc). Included from the top
# CMakeLists.txt after every add_subdirectory, so that the programs' targets exist.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(STRATA_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/strata)

# The library and its headers. strata links strata_core and the rest PRIVATE into the shared
# object, so the export carries only the include directory and libstrata.so itself.
install(TARGETS strata EXPORT strataTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/strata DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The programs that exist in this configuration. Installed, they find the installed libstrata
# next to them ($ORIGIN/../lib), wherever the prefix is moved to.
set(_strata_programs)
foreach(_program strata-run strata-bench strata-eval strata-mkmodel strata-worker strata-inspect strata-report
                 strata-server)
  if(TARGET ${_program})
    list(APPEND _strata_programs ${_program})
  endif()
endforeach()
if(_strata_programs)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(_strata_program_rpath "${CMAKE_INSTALL_LIBDIR}")
  else()
    file(RELATIVE_PATH _strata_bin_to_lib "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
    set(_strata_program_rpath "$ORIGIN/${_strata_bin_to_lib}")
  endif()
  set_property(TARGET ${_strata_programs} APPEND PROPERTY INSTALL_RPATH "${_strata_program_rpath}")
  install(TARGETS ${_strata_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# CMake package: lib/cmake/strata/strata{Config,ConfigVersion,Targets}.cmake.
install(EXPORT strataTargets NAMESPACE strata:: DESTINATION ${STRATA_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/strataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/strataConfig.cmake INSTALL_DESTINATION ${STRATA_INSTALL_CMAKEDIR})
# Same major version: libstrata's SONAME carries the major version.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strataConfig.cmake ${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  DESTINATION ${STRATA_INSTALL_CMAKEDIR})

# pkg-config: paths relative to the .pc file's own folder (${pcfiledir}), so that the file stays
# right for `cmake --install --prefix` and DESTDIR alike.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(STRATA_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(STRATA_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(STRATA_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH _strata_pc_to_prefix "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  set(STRATA_PC_PREFIX "\${pcfiledir}/${_strata_pc_to_prefix}")
  set(STRATA_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(STRATA_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/strata.pc.in ${PROJECT_BINARY_DIR}/strata.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/strata.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
