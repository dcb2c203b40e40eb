# `cmake --install` puts tfm's libraries, their headers and a CMake package in the prefix, so a
# program links tfm with find_package(tfm) and target tfm::tfm (examples/CMakeLists.txt).
#   <prefix>/include/tfm/translator.h, model_file.h   the API's front doors
#   <prefix>/include/tfm/LAYER/*.h                    the layers' headers (searched as "LAYER/x.h")
#   <prefix>/lib/libtfm_LAYER.a                       the layers (static), app/ excepted
#   <prefix>/lib/cmake/tfm/                           tfmConfig.cmake, the exported targets
# The package links the LibTorch this build used (TFM_TORCH_ROOT, by absolute path) and finds
# the Debian libraries again where it is used.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TFM_LIBRARY_LAYERS runtime text tokenizer metrics data model decode translation dist train viz)
set(TFM_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tfm)

# tfm::tfm: every library layer, and the front-door headers' directory.
add_library(tfm_library INTERFACE)
set_target_properties(tfm_library PROPERTIES EXPORT_NAME tfm)
target_include_directories(tfm_library INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
foreach(layer ${TFM_LIBRARY_LAYERS})
  target_link_libraries(tfm_library INTERFACE tfm_${layer})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tfm/${layer}
          FILES_MATCHING PATTERN "*.h")
  list(APPEND TFM_INSTALLED_TARGETS tfm_${layer})
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tfm/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tfm)
install(TARGETS ${TFM_INSTALLED_TARGETS} tfm_library tfm_libtorch tfm_libxsmm EXPORT tfmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tfm)
install(EXPORT tfmTargets NAMESPACE tfm:: DESTINATION ${TFM_PACKAGE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tfmConfig.cmake.in ${CMAKE_BINARY_DIR}/tfmConfig.cmake
                              INSTALL_DESTINATION ${TFM_PACKAGE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tfmConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tfmConfig.cmake ${CMAKE_BINARY_DIR}/tfmConfigVersion.cmake
        DESTINATION ${TFM_PACKAGE_DIR})
