#!/usr/bin/env bash
# Creates .venv at the repository root (Python 3.11) and installs memgraph-tf with the extras the
# test suite needs: test (pytest, hypothesis, the ArcadeDB Bolt server) and beam (Apache Beam, which
# pins protobuf 6.x; TensorFlow and the serving protos run on it). Idempotent: a second run only
# checks; it installs again when pyproject.toml or the extras changed. Used by scripts/demo.sh and
# scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
EXTRAS="test,beam"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.memgraph-tf-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$(cat "$stamp")" != "$EXTRAS" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[$EXTRAS]"
  echo "$EXTRAS" > "$stamp"
fi
