#!/usr/bin/env bash
# Fuzzes wirelab's parsers: builds the cargo-fuzz targets in fuzz/ and runs each for
# SECONDS (default 60), one after the other, as one libFuzzer job (-jobs=1), growing its
# corpus in fuzz/corpus/TARGET; then minimises that corpus (cargo fuzz cmin) and prints
# one line of figures per target. Crashes land in fuzz/artifacts/TARGET.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (no TARGET: all of `cargo fuzz list`)
#
# Environment: FUZZ_RSS_MB (default 2048) caps a run's memory and one allocation;
# FUZZ_TIMEOUT (default 10) is the seconds one input may take before it counts as a
# hang; FUZZ_NO_CMIN=1 keeps the corpus as the run left it; FUZZ_CORPUS_MAX (default
# 300) is the corpus size above which minimising keeps edges only. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

secs=60
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
  secs=$1
  shift
fi
rss_mb=${FUZZ_RSS_MB:-2048}
hang_s=${FUZZ_TIMEOUT:-10}

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked
fi
# cargo-fuzz needs nightly flags (-Zsanitizer); without a nightly toolchain, let the
# stable compiler accept them.
tc=()
if cargo +nightly --version >/dev/null 2>&1; then
  tc=(+nightly)
else
  export RUSTC_BOOTSTRAP=1
fi
fuzz() { cargo "${tc[@]}" fuzz "$@" --fuzz-dir "$root/fuzz"; }

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(fuzz list)
fi

# Build every target first, then run the built binaries: edits to the sources during a
# long run do not change what is being fuzzed.
for t in "${targets[@]}"; do
  echo "== $t: build" >&2
  fuzz build "$t"
done
bindir=$root/fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_odr_violation=0}

logs=$root/fuzz/target/logs
mkdir -p "$logs"
summary=()
status=0
for t in "${targets[@]}"; do
  corpus=$root/fuzz/corpus/$t
  mkdir -p "$corpus" "$root/fuzz/artifacts/$t"
  before=$(find "$root/fuzz/artifacts/$t" -type f | wc -l)
  echo "== $t: ${secs}s" >&2
  # -jobs=1 runs one worker process whose output goes to fuzz-0.log in the current
  # directory: run from the log directory. `timeout` bounds a run that fails to stop.
  rm -f "$logs/fuzz-0.log"
  rc=0
  (cd "$logs" && timeout --kill-after=30 $((secs + 120)) "$bindir/$t" "$corpus" \
    -max_total_time="$secs" -jobs=1 -timeout="$hang_s" -rss_limit_mb="$rss_mb" \
    -malloc_limit_mb="$rss_mb" -print_final_stats=1 \
    -artifact_prefix="$root/fuzz/artifacts/$t/") >/dev/null 2>&1 || rc=$?
  log=$logs/$t.log
  mv -f "$logs/fuzz-0.log" "$log" 2>/dev/null || : >"$log"
  after=$(find "$root/fuzz/artifacts/$t" -type f | wc -l)
  crashes=$((after - before))
  stat() { grep -a "^stat::$1:" "$log" | tail -1 | awk '{print $2}'; }
  runs=$(stat number_of_executed_units)
  eps=$(stat average_exec_per_sec)
  rss=$(stat peak_rss_mb)
  last=$(grep -aE '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  if [ "$crashes" -gt 0 ] || { [ "$rc" -ne 0 ] && [ -z "$runs" ]; }; then
    status=1
    echo "== $t: FAILED (exit $rc, $crashes new artifact(s) in fuzz/artifacts/$t); log: $log" >&2
    grep -aE 'ERROR|panicked|SUMMARY' "$log" | head -5 >&2 || true
  fi
  if [ "${FUZZ_NO_CMIN:-0}" != 1 ]; then
    # `cargo fuzz cmin`, with libFuzzer's set-cover merge (a smaller set of inputs with
    # every feature) into an empty directory, then swapped in. Over FUZZ_CORPUS_MAX files
    # (default 300), merge again keeping every edge rather than every hit-count bucket.
    min=$root/fuzz/target/cmin-$t
    for counters in 1 0; do
      rm -rf "$min" && mkdir -p "$min"
      if (cd "$logs" && timeout 1800 "$bindir/$t" -set_cover_merge=1 -use_counters=$counters \
        -timeout="$hang_s" -rss_limit_mb="$rss_mb" "$min" "$corpus") >"$logs/$t.cmin.log" 2>&1
      then
        rm -rf "$corpus" && mv "$min" "$corpus"
      else
        echo "== $t: cmin failed, corpus kept; log: $logs/$t.cmin.log" >&2
        break
      fi
      [ "$(find "$corpus" -type f | wc -l)" -le "${FUZZ_CORPUS_MAX:-300}" ] && break
    done
  fi
  files=$(find "$corpus" -type f | wc -l)
  summary+=("$(printf '%-14s %4ss  runs %-10s exec/s %-7s cov %-6s ft %-6s rss %-5s corpus %-5s crashes %s' \
    "$t" "$secs" "${runs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "${rss:-?}MB" "$files" "$crashes")")
  echo "${summary[-1]}" >&2
done
printf '%s\n' "${summary[@]}"
exit $status
