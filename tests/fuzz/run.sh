#!/usr/bin/env bash
# Runs graphrw's libFuzzer targets for SECONDS each (default 60), from a seed
# corpus made at run time: models of ONNX's backend test corpus
# (libonnx-testdata), the rule files in examples/ (the pattern library
# included), bench/ and the tests, and for the pattern target each rule of the
# pattern library as "MODEL %% MATCH %% REPLACE" (empty model: the match's body).
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS [TARGET...]]   (BUILD_DIR configured
# with -DGRAPHRW_FUZZ=ON, Clang; TARGETs: model rules pattern, default all three)
# ctest runs each target for 30 s (fuzz_smoke_*); a longer run:
#   tests/fuzz/run.sh build-asan 3600
set -euo pipefail
build=$1
seconds=${2:-60}
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(model rules pattern)
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/models" "$work/rules" "$work/patterns" "$work/crashes"
i=0
for m in /usr/share/libonnx-testdata/data/node/*/model.onnx /usr/share/libonnx-testdata/data/pytorch-converted/*/model.onnx; do
  cp "$m" "$work/models/$i.onnx"
  i=$((i + 1))
  [ "$i" -ge 400 ] && break
done
cp "$root"/examples/*.onnx "$work/models/"
cp "$root"/examples/*.json "$root"/bench/rules/*.json "$work/rules/"
cp "$root"/examples/patterns/*.json "$work/rules/"
python3 - "$root/examples/patterns" "$work/patterns" <<'PY'
import glob, json, os, sys
i = 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    for p in json.load(open(path))["passes"]:
        for rule in p.get("rules", []):
            if isinstance(rule.get("match"), str) and isinstance(rule.get("replace"), str):
                open(f"{sys.argv[2]}/{i}.txt", "w").write("\n%%\n" + rule["match"] + "\n%%\n" + rule["replace"])
                i += 1
PY
python3 - "$root/tests/schema/bad_rules.json" "$work/rules" <<'PY'
import json, sys
for i, case in enumerate(json.load(open(sys.argv[1]))):
    open(f"{sys.argv[2]}/bad{i}.json", "w").write(json.dumps(case["rules"]))
PY
status=0
for target in "${targets[@]}"; do
  corpus="$work/models"
  [ "$target" = rules ] && corpus="$work/rules"
  [ "$target" = pattern ] && corpus="$work/patterns"
  echo "fuzz_$target: $(ls "$corpus" | wc -l) seeds, ${seconds}s"
  if ! "$build/tests/fuzz/graphrw-fuzz-$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
      -artifact_prefix="$work/crashes/" -print_final_stats=1 "$corpus" 2> "$work/$target.log"; then
    status=1
    tail -40 "$work/$target.log"
    mkdir -p "$root/fuzz-crashes" && cp "$work/crashes/"* "$root/fuzz-crashes/" 2>/dev/null || true
  fi
  grep -E "stat::number_of_executed_units|Done" "$work/$target.log" | tail -2 || true
done
if [ "$status" = 0 ]; then echo "${#targets[@]} passed, 0 failed"; else echo "fuzzers: a target failed (artifacts in fuzz-crashes/)"; fi
exit "$status"
