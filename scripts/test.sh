#!/usr/bin/env bash
# The test command: sets up .venv, builds the op, runs the whole suite, then a short fuzz run.
# Exits non-zero on any failure, including pytest collecting no tests (pytest exit 5).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# Debian's clang-format checks the C++ op's formatting (tests/test_lint.py); install it if missing.
if ! command -v clang-format >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q clang-format >/dev/null 2>&1 \
    || { $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q clang-format >/dev/null 2>&1; } \
    || echo "scripts/test.sh: could not install clang-format (tests/test_lint.py needs it)" >&2
fi
.venv/bin/memgraph-tf build-ops
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 5
fi
[ "$status" -eq 0 ] || exit "$status"
if [ -z "${MEMGRAPH_TF_SKIP_FUZZ:-}" ] && [ -x scripts/fuzz.sh ]; then
  bash scripts/fuzz.sh "${MEMGRAPH_TF_FUZZ_SECONDS:-60}"
fi
