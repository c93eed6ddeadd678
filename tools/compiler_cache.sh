# Sourced by the build scripts (tools/build_engines.sh, tools/build_native.sh): C and C++ compile
# through ccache (Debian package ccache) when it is installed, so a second clone on the same
# machine (a CI checkout, a worktree) takes the engines' objects from the cache instead of
# compiling the same sources with the same flags again. The objects are the compiler's own output
# for the same preprocessed source and flags; nothing measured changes. EB_COMPILER_CACHE=0 turns
# it off (every object compiled).
#
# Go and Maven keep their own caches (~/.cache/go-build, ~/.m2) the same way; Rust's crates are
# compiled per clone (cargo keeps no cache shared between target folders).
#  - /usr/lib/ccache first on PATH: every `cc`, `gcc`, `c++` the builds find (CMake's compiler
#    detection, autotools' CC, LMDB's make, the cc crate of the runner's build scripts) is
#    ccache's, which calls the real one.
#  - CCACHE_BASEDIR: paths inside the clone count as relative to it, so two clones' compiles of
#    one file hash alike; CCACHE_NOHASHDIR: the working folder is not hashed either (it only
#    names the folder in debug information, which perf does not read). An object taken from the
#    cache keeps the __FILE__ strings of the clone that compiled it (RocksDB's LOG lines name
#    their source file): text in messages, nothing that runs differently.
if [ "${EB_COMPILER_CACHE:-1}" != 0 ] && [ -x /usr/lib/ccache/gcc ]; then
  export PATH="/usr/lib/ccache:$PATH"
  CCACHE_BASEDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  export CCACHE_BASEDIR
  export CCACHE_NOHASHDIR=1
fi
