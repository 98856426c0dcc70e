# `cpack -G DEB` (or `cmake --build <dir> --target package`) → graspd_<version>_amd64.deb:
# /usr/bin/graspd, the systemd unit, /etc/graspd/graspd.conf (a conffile), a `graspd` system user
# and /var/lib/graspd (deploy/debian/postinst), Depends: computed by dpkg-shlibdeps.
include(GNUInstallDirs)

install(TARGETS graspd RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/graspd.conf.example DESTINATION /etc/graspd
        RENAME graspd.conf)
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md ${PROJECT_SOURCE_DIR}/docs/configuration.md
              ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION share/doc/graspd)

# The packaged unit is deploy/graspd.service with the packaged binary and the package's system
# user instead of a dynamic one (the user owns /var/lib/graspd across upgrades).
file(READ ${PROJECT_SOURCE_DIR}/deploy/graspd.service unit)
string(REPLACE "/usr/local/bin/graspd" "/usr/bin/graspd" unit "${unit}")
string(REPLACE "DynamicUser=yes" "User=graspd\nGroup=graspd" unit "${unit}")
file(WRITE ${PROJECT_BINARY_DIR}/package/graspd.service "${unit}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/deploy/graspd.service)
install(FILES ${PROJECT_BINARY_DIR}/package/graspd.service DESTINATION /lib/systemd/system)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME graspd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "graspd maintainers <graspd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GRASP relay daemon: Nostr relay and git hosting for git over Nostr")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# git serves the hosted repositories (git upload-pack / receive-pack run as child processes).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "git")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
