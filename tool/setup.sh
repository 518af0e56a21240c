#!/usr/bin/env bash
# One-command set-up for a fresh Debian machine: installs the build dependencies (apt, with
# sudo when not root), configures and builds bo-doctor, then runs the requested job.
#   tool/setup.sh demo   build, then `bo-doctor check` on the bundled llama-tiny model
#   tool/setup.sh test   build, then the whole test suite (ctest)
#   tool/setup.sh large  build, then the real-size llama32-1b fixtures (slow; not part of `test`)
#   tool/setup.sh asan   build with ASan + UBSan into build-asan/ (no XRT) and run the test suite
#   tool/setup.sh fuzz   build the libFuzzer harnesses with clang and run each briefly (tool/fuzz.sh)
#   tool/setup.sh fuzz-smoke  the CI run: every harness for FUZZ_SMOKE_SECONDS (default 20), failing
#                        on any crash, timeout or out-of-memory (build folder: FUZZ_BUILD_DIR)
#   tool/setup.sh build  build only
set -euo pipefail
job=${1:-demo}
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
pkgs=(build-essential cmake pkg-config libxrt-dev libcli11-dev libeigen3-dev libspdlog-dev
      libgtest-dev nlohmann-json3-dev libxxhash-dev uuid-dev python3 python3-dev python3-xxhash python3-numpy clang
      clang-format      chromium python3-jsonschema python3-junitparser)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "$job" = asan ]; then
  # Sanitized suite: every test under AddressSanitizer (with LeakSanitizer) and UBSan, any
  # report fails the run. XRT stays off here (the Release job covers the noop device).
  build=${BUILD_DIR:-$here/build-asan}
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DBO_DOCTOR_WITH_XRT=OFF \
    -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    >/dev/null
  cmake --build "$build" -j"$(nproc)"
  cd "$build"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
  exec ctest --output-on-failure -j"$(nproc)" -LE large
fi
if [ "$job" = fuzz ]; then exec bash "$here/tool/fuzz.sh" "${FUZZ_SECONDS:-30}"; fi
if [ "$job" = fuzz-smoke ]; then
  # A fixed, short run of every harness: tool/fuzz.sh exits 1 at the first crash and leaves its
  # input in the build folder. docs/robustness.md gives the job's duration on 2 cores.
  exec bash "$here/tool/fuzz.sh" "${FUZZ_SMOKE_SECONDS:-20}" fuzz_model fuzz_check fuzz_trace fuzz_tensor fuzz_spool
fi

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)"

case "$job" in
  demo) exec "$build/bo-doctor" check "$here/fixtures/models/llama-tiny/model.json" ;;
  test) cd "$build" && exec ctest --output-on-failure -j"$(nproc)" -LE large ;;
  large) cd "$build" && exec ctest --output-on-failure -L large ;;
  build) ;;
  *) echo "setup: unknown job '$job'; expected demo, test, large, asan, fuzz, fuzz-smoke or build" >&2; exit 2 ;;
esac
