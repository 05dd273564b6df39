# Cross-compiling for aarch64 with Debian's g++-aarch64-linux-gnu; the tests run under
# qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), with the arm64 libraries Debian's multiarch
# installs under /usr/lib/aarch64-linux-gnu (scripts/test-aarch64.sh).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# The arm64 C library, libgomp and libstdc++ come from Debian's multiarch (libc6:arm64 ...), found
# where the program asks for them: qemu needs no -L prefix. (With -L /usr/aarch64-linux-gnu, the
# cross toolchain's own copies, OpenMP programs of two threads hang under qemu 7.2.)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# pkg-config reads the arm64 .pc files only (here rather than in the calling script, so that a
# reconfiguration started by the build sees the same).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
