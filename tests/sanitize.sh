#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build of the native library, run over
# the kernel-path tests (the whole case table, bad input, hostile input and fuzzing) on the
# machine's best instruction set, and the case table, hostile input and fuzzing on every other
# set it has (RESAMPLE_GRAD_ISA).
# Any out-of-bounds access or undefined behaviour aborts the run (no recovery).
#   bash tests/sanitize.sh            (from the repository root, in the test environment)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/sanitize
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DRESAMPLE_GRAD_SANITIZE="address,undefined" >/dev/null
cmake --build "$build" -j 2 >/dev/null
library=$(find "$build" -name 'libresample_grad_ops.so' | head -n 1)
# libstdc++ too: ASan intercepts __cxa_throw and needs it loaded before the extensions that throw
asan_runtime="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)"
export RESAMPLE_GRAD_LIBRARY="$PWD/$library"
training_library=$(find "$build" -name 'libresample_grad_training_ops.so' | head -n 1)  # com.microsoft::ResizeGrad
export RESAMPLE_GRAD_TRAINING_LIBRARY="$PWD/$training_library"
export LD_PRELOAD="$asan_runtime"
# Python itself is not instrumented: leak checks would report the interpreter's own allocations.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
best=$(python -c "from resample_grad import runtime; print(runtime.isa())")
python -m pytest -q -p no:cacheprovider tests -k "kernel" "$@"
for isa in baseline avx2 avx512; do
  [ "$isa" = "$best" ] && break
  echo "sanitize: RESAMPLE_GRAD_ISA=$isa"
  RESAMPLE_GRAD_ISA=$isa python -m pytest -q -p no:cacheprovider tests/ops/test_ops.py tests/errors/test_hostile.py \
    tests/errors/test_fuzz.py -k "kernel" "$@"
done
