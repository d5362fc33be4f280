# Sourced by the scripts that pack binaries for a lent machine (gpu-bundle.sh, fig4-cores.sh):
# the shared libraries such binaries load that the machine need not have.
#
# Libraries that machine has itself: glibc's and CUDA's (a lent GPU machine brings its own).
system_libs='/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so|/usr/local/cuda|libcuda\.so'

# copy_libs DEST BINARY...: every library the binaries load, outside system_libs, into DEST.
copy_libs() {
  local dest=$1
  shift
  for b in "$@"; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -vE "$system_libs" | xargs -r -I{} cp -L {} "$dest/"
}
