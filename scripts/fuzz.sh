#!/usr/bin/env bash
# Fuzzes the plain C++ blob reader and base64url decoder with libFuzzer + ASan + UBSan.
#   bash scripts/fuzz.sh SECONDS
# Installs clang with apt-get when it is missing and this runs as root (Debian ships libFuzzer with
# clang); otherwise prints a SKIPPED line and exits 0. Seeds the corpus from tests/golden/**/*.bin in
# a temporary folder (never inside the repository). Exits non-zero when the fuzzer finds a crash,
# a sanitizer report or a broken invariant; the reproducer is kept in $MEMGRAPH_TF_FUZZ_ARTIFACTS_DIR
# (default: a temporary folder, printed).
set -euo pipefail
seconds="${1:-60}"
case "$seconds" in
  ''|*[!0-9]*) echo "usage: $0 SECONDS (a whole number, got '$seconds')" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
repo="$(pwd)"

find_clang() {
  for c in clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null 2>&1; then echo "$c"; return 0; fi
  done
  return 1
}

cxx="$(find_clang || true)"
if [ -z "$cxx" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "fuzz: clang not found; installing it with apt-get (Debian's clang ships libFuzzer)"
    if ! (apt-get install -y clang >/dev/null 2>&1 || (apt-get update >/dev/null 2>&1 && apt-get install -y clang >/dev/null 2>&1)); then
      echo "fuzz: SKIPPED (apt-get install -y clang failed; install clang to fuzz)"
      exit 0
    fi
    cxx="$(find_clang || true)"
  fi
fi
if [ -z "$cxx" ]; then
  echo "fuzz: SKIPPED (no clang++ on PATH and not root to apt-get install clang)"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/memgraph-tf-fuzz.XXXXXX")"
artifacts="${MEMGRAPH_TF_FUZZ_ARTIFACTS_DIR:-$work/artifacts}"
mkdir -p "$work/corpus" "$artifacts"
bin="$work/blob_reader_fuzzer"
if ! "$cxx" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -fno-omit-frame-pointer -I "$repo/memgraph_tf/cc" \
    "$repo/memgraph_tf/cc/blob_reader.cc" "$repo/memgraph_tf/cc/base64url.cc" \
    "$repo/memgraph_tf/cc/fuzz/blob_reader_fuzzer.cc" -o "$bin" 2>"$work/build.log"; then
  if grep -qi "fuzzer" "$work/build.log" && grep -qiE "cannot find|no such file|not found" "$work/build.log"; then
    echo "fuzz: SKIPPED ($cxx has no libFuzzer runtime: $(head -c 300 "$work/build.log"))"
    exit 0
  fi
  cat "$work/build.log" >&2
  echo "fuzz: FAILED to build the fuzzer" >&2
  exit 1
fi
seeds=0
while IFS= read -r -d '' f; do
  seed="$work/corpus/$(basename "$(dirname "$f")")_$(basename "$f")"
  cp "$f" "$seed"
  # The same vector as the Memgraph transport's base64url text, for the decoder's path to the reader.
  base64 -w0 "$f" | tr '+/' '-_' >"$seed.b64"
  seeds=$((seeds + 2))
done < <(find "$repo/tests/golden" -name '*.bin' -print0)
echo "fuzz: $cxx, ${seconds}s, ${seeds} seeds from tests/golden, work dir $work"
status=0
"$bin" "$work/corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 >"$work/fuzz.log" 2>&1 || status=$?
grep -E "DONE|^Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec" "$work/fuzz.log" || true
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/fuzz.log" >&2
  echo "fuzz: FINDING (exit $status); reproducer(s) in $artifacts" >&2
  exit "$status"
fi
rm -rf "$work/corpus"
echo "fuzz: OK, no finding (log: $work/fuzz.log)"
