#!/usr/bin/env bash
# Packs what the GPU checks need into .devrun/ (ignored by git) for a machine that has a GPU but
# not this project's Debian libraries: the GPU test executables and tools from build/, the
# shared libraries they load (not glibc, not CUDA or NCCL, which that machine has), Open MPI
# with its plugins for the mpirun test, and scripts/gpu-check.sh. The device tool carries the
# folder (run: carry [".devrun"], command "bash .devrun/gpu-check.sh"); about 52 MB (the carry
# limit is 64 MiB; BUNDLE_FUZZ=1 adds the fuzz target, 65 MB: drop a step's files to fit).
#
#   scripts/gpu-bundle.sh [BUILD_DIR]     (default: build; configure with CUDA and NCCL found)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
out="$root/.devrun"
bins=(tests/hw/cuda/hw_cuda_gpu_test tests/hw/cuda/hw_gpu_tools_test tests/hw/live/live_gpu_test
      hw/nccl/adaptsim-nccl calibrate/calibrate hw/live/adaptsim-live hw/tcp/adaptsim-tcp
      sim/simctl/simctl hw/testbed/adaptsim-testbed hw/mpi/adaptsim-mpi)
for b in "${bins[@]}"; do
  [ -x "$build/$b" ] || { echo "gpu-bundle: $build/$b missing (a CUDA build is needed)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/lib" "$out/root"
for b in "${bins[@]}"; do
  mkdir -p "$out/build/$(dirname "$b")"
  cp "$build/$b" "$out/build/$b"
done
# Libraries outside glibc and CUDA, from the binaries' own dependency lists.
. "$root/scripts/bundle-libs.sh"
copy_libs "$out/lib" "${bins[@]/#/$build/}"
# Open MPI, and iproute2 for the testbed steps (ip, tc): their packages and those of the libraries
# they and Open MPI's plugins load, at their own paths (mpiexec and its plugins look there),
# copied without overwriting anything on that machine (where iproute2 is, it stays).
mpiexec_bin="$(readlink -f "$(command -v mpiexec)")"
deps=$( (ldd "$mpiexec_bin" "$(readlink -f "$(command -v ip)")" "$(readlink -f "$(command -v tc)")"
  find /usr/lib/x86_64-linux-gnu/openmpi -name '*.so*' -exec ldd {} \;) 2>/dev/null |
  awk '$3 ~ /^\// {print $3}' | sort -u | grep -vE "$system_libs")
pkgs=$( (echo openmpi-bin libopenmpi3 openmpi-common libpmix2 libnl-3-200 iproute2
  for d in $deps; do dpkg -S "$(readlink -f "$d")" 2>/dev/null | cut -d: -f1 || true; done) |
  sort -u | grep -vE '^(libstdc\+\+6|libgcc-s1|zlib1g|libudev1|libc6)$')
for p in $pkgs; do dpkg -L "$p"; done | sort -u | while read -r f; do
  case "$f" in /usr/share/doc/*|/usr/share/man/*|/usr/share/lintian/*) continue ;; esac
  if [ -f "$f" ] || [ -L "$f" ]; then echo "$f"; fi
done > "$out/files"
for f in /usr/bin/mpiexec /usr/bin/mpirun /etc/alternatives/mpiexec /etc/alternatives/mpirun; do
  [ -e "$f" ] && echo "$f" >> "$out/files"
done
# Paths under /usr only (merged /usr on both machines: /lib is a link there), directories 755.
sed -E 's#^/(lib|bin|sbin)/#/usr/\1/#' "$out/files" | sort -u | while read -r f; do
  src="$f"; [ -e "$src" ] || src="${f#/usr}"
  mkdir -p "$out/root$(dirname "$f")"
  cp -P "$src" "$out/root$f"
done
find "$out/root" -type d -exec chmod 755 {} +
rm "$out/files"
cp "$root/scripts/gpu-check.sh" "$out/gpu-check.sh"
# The adaptsim-tcp without frame authentication, for gpu-check.sh's auth step (scripts/bench-auth.sh
# builds it in build-base/), when it is there.
if [ -x "$root/build-base/build/hw/tcp/adaptsim-tcp" ]; then
  mkdir -p "$out/base"
  cp "$root/build-base/build/hw/tcp/adaptsim-tcp" "$out/base/"
fi
# The scenario fuzz target (ASan + UBSan + libFuzzer, clang's runtimes linked in) for the fuzz
# step, without its debug sections (28 MB -> 14 MB), when build-fuzz/ has one and BUNDLE_FUZZ=1:
# with it the bundle passes the device tool's 64 MiB (65 MB measured 2026-11-27), without it 52.
if [ "${BUNDLE_FUZZ:-0}" = 1 ] && [ -x "$root/build-fuzz/fuzz/fuzz_scenario" ]; then
  cp "$root/build-fuzz/fuzz/fuzz_scenario" "$out/fuzz_scenario"
  strip --strip-debug "$out/fuzz_scenario"
fi
# The paths the executables were configured with: gpu-check.sh recreates them as links.
printf 'built_root=%s\nbuilt_build=%s\n' "$root" "$(cd "$build" && pwd)" > "$out/paths"
du -sh "$out"
