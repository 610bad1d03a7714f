# What `cmake --install` puts where, and a Debian package from CPack
# (`cpack -G DEB` in the build folder). Completion scripts and man pages are
# generated from the built binary: the same declarations --help prints.
include(GNUInstallDirs)

option(GRAPHRW_MAN "Generate man pages with help2man (Debian package help2man)" ON)

set(GRAPHRW_GENERATED ${CMAKE_BINARY_DIR}/share)
add_custom_command(
  OUTPUT ${GRAPHRW_GENERATED}/bash-completion/graphrw ${GRAPHRW_GENERATED}/zsh/_graphrw
  COMMAND ${CMAKE_COMMAND} -E make_directory ${GRAPHRW_GENERATED}/bash-completion ${GRAPHRW_GENERATED}/zsh
  COMMAND graphrw completion bash > ${GRAPHRW_GENERATED}/bash-completion/graphrw
  COMMAND graphrw completion zsh > ${GRAPHRW_GENERATED}/zsh/_graphrw
  DEPENDS graphrw
  COMMENT "Shell completion for graphrw")
set(GRAPHRW_GENERATED_FILES ${GRAPHRW_GENERATED}/bash-completion/graphrw ${GRAPHRW_GENERATED}/zsh/_graphrw)

if(GRAPHRW_MAN)
  find_program(HELP2MAN help2man REQUIRED)
  add_custom_command(
    OUTPUT ${GRAPHRW_GENERATED}/man/graphrw.1.stamp
    COMMAND ${CMAKE_COMMAND} -DGRAPHRW=$<TARGET_FILE:graphrw> -DHELP2MAN=${HELP2MAN}
            -DOUT=${GRAPHRW_GENERATED}/man -P ${PROJECT_SOURCE_DIR}/cmake/ManPages.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${GRAPHRW_GENERATED}/man/graphrw.1.stamp
    DEPENDS graphrw ${PROJECT_SOURCE_DIR}/cmake/ManPages.cmake
    COMMENT "Man pages for graphrw (help2man)")
  list(APPEND GRAPHRW_GENERATED_FILES ${GRAPHRW_GENERATED}/man/graphrw.1.stamp)
endif()
add_custom_target(graphrw_generated ALL DEPENDS ${GRAPHRW_GENERATED_FILES})

install(TARGETS graphrw RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schemas/ DESTINATION ${CMAKE_INSTALL_DATADIR}/graphrw/schemas
        PATTERN "tools" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/graphrw/examples
        PATTERN "*.expanded.onnx" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${GRAPHRW_GENERATED}/bash-completion/graphrw
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${GRAPHRW_GENERATED}/zsh/_graphrw DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
if(GRAPHRW_MAN)
  install(DIRECTORY ${GRAPHRW_GENERATED}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1")
endif()

set(CPACK_PACKAGE_NAME graphrw)
set(CPACK_PACKAGE_VENDOR "graphrw")
set(CPACK_PACKAGE_CONTACT "graphrw developers <graphrw@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Rewrite ONNX graphs for Graphcore IPUs (PopART) and any ONNX backend")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the libraries the binary links (libonnx, libprotobuf, ...)
set(CPACK_STRIP_FILES ON)
include(CPack)
