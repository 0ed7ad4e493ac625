#!/usr/bin/env bash
# The pulse counter input at rising pulse rates on an emulated GPIO line (an event FIFO of 16, as the kernel's):
# pulses counted and lost per rate, CPU time per pulse, and the highest rate with no pulse lost. The build is a
# release build. Usage: Tests/Tools/measure-counter.sh [SECONDS_PER_RATE] [RATE...]
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release --product HardwareBenchmark 2>&1 | grep -E "error|warning:|Build complete" || true
exec "$(swift build -c release --show-bin-path)/HardwareBenchmark" counter "$@"
