#!/usr/bin/env bash
# Installs adaptsim's build and run dependencies from Debian's packages.
# Idempotent: packages already present are left as they are; `apt-get update` runs first
# because a fresh machine's package lists may be stale or missing.
#
#   scripts/setup.sh          what building, running and testing need
#   scripts/setup.sh fuzz     and clang with libFuzzer's runtime, for scripts/fuzz.sh
set -euo pipefail

packages=(
  build-essential cmake git
  libboost-graph-dev libeigen3-dev libyaml-cpp-dev doctest-dev libbenchmark-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libssl-dev zlib1g-dev
  dataset-fashion-mnist
  etcd-server
  libopenmpi-dev openmpi-bin
  python3-matplotlib python3-pandas
  iproute2 iperf3 procps iptables
)
for group in "$@"; do
  case $group in
    fuzz) packages+=(clang libclang-rt-dev) ;;  # Debian 12: clang 14, libclang_rt.fuzzer
    *)
      echo "setup: unknown group '$group'; expected: fuzz" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "setup: dependencies present"
