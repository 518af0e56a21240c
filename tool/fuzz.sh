#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (ASan + UBSan, coverage) and runs each
# for SECONDS (default 60) on a corpus seeded from the fixtures; prints the executions per
# harness and stops at the first crash (its input is left in the build folder). docs/robustness.md.
#   tool/fuzz.sh [SECONDS] [HARNESS...]     (harnesses: fuzz_model fuzz_check fuzz_trace fuzz_tensor fuzz_spool)
# FUZZ_BUILD_DIR: the build folder (default build-fuzz/); FUZZ_JOBS: build jobs (default: nproc).
set -euo pipefail
secs=${1:-60}
shift || true
here=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$here/build-fuzz}
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(fuzz_model fuzz_check fuzz_trace fuzz_tensor fuzz_spool)
command -v clang++ >/dev/null || { echo "fuzz: clang++ is needed (Debian: clang)" >&2; exit 2; }

CC=clang CXX=clang++ cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBOD_FUZZ=ON \
  -DBO_DOCTOR_WITH_XRT=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
  >/dev/null
cmake --build "$build" -j"${FUZZ_JOBS:-$(nproc)}" --target "${harnesses[@]}" >/dev/null

# Seed corpora: every fixture model, the committed traces, a few tensor files.
seeds=$build/seeds
mkdir -p "$seeds/model" "$seeds/trace" "$seeds/tensor" "$seeds/spool"
for m in "$here"/fixtures/models/*/model.json "$here"/fixtures/bugs/*/model.json; do
  [ -e "$(dirname "$m")/LARGE" ] && continue
  cp "$m" "$seeds/model/$(basename "$(dirname "$m")").json"
done
cp "$here"/tests/data/trace/*.jsonl "$seeds/trace/" 2>/dev/null || true
cp "$here"/tests/data/spool/* "$seeds/spool/" 2>/dev/null || true
printf '\x00\x00%0128d' 0 > "$seeds/tensor/bin"
printf '\x01\x00\x93NUMPY\x01\x00v\x00{'"'"'descr'"'"': '"'"'<f4'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (4, 8), }' > "$seeds/tensor/npy"
printf '\x02\x00\x40\x00\x00\x00\x00\x00\x00\x00{"w":{"dtype":"F32","shape":[4,8],"data_offsets":[0,128]}}' > "$seeds/tensor/safetensors"

total=0
for h in "${harnesses[@]}"; do
  case $h in
    fuzz_model|fuzz_check) seed=$seeds/model ;;
    fuzz_trace) seed=$seeds/trace ;;
    fuzz_tensor) seed=$seeds/tensor ;;
    fuzz_spool) seed=$seeds/spool ;;
    *) echo "fuzz: unknown harness $h" >&2; exit 2 ;;
  esac
  corpus=$build/corpus/$h
  mkdir -p "$corpus"
  log=$build/$h.log
  if ! (cd "$build" && "./$h" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
          -print_final_stats=1 "$corpus" "$seed" >"$log" 2>&1); then
    echo "fuzz: $h FAILED; see $log" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$log" >&2 || tail -20 "$log" >&2
    exit 1
  fi
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  total=$((total + execs))
  echo "fuzz: $h: $execs execs in ${secs}s, corpus $(ls "$corpus" | wc -l) inputs, no crash"
done
echo "fuzz: $total execs in total"
