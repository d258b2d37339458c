#!/usr/bin/env bash
# Run by .ci/run with a core-only install first on PATH (`pip install .`, no extra): prepare the embedded sample,
# import a one-line JSONL of one's own, write a predictions file with a rule (no extra needed), evaluate it and
# write the HTML report, all without torch; then check that a command needing an extra names it.
set -euo pipefail
python -c "import importlib.util as u, sys; sys.exit('core install pulled torch' if u.find_spec('torch') else 0)"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
ragtruth-spans --quiet prepare --sample --out "$tmp/data"
printf '%s\n' '{"context": "Opened in 1999.", "response": "Opened in 1998.", "spans": [{"start": 10, "end": 14}]}' \
  > "$tmp/mine.jsonl"
ragtruth-spans --quiet import jsonl --in "$tmp/mine.jsonl" --out "$tmp/mine" --split-by-source train=1
test -s "$tmp/mine/train.jsonl"
ragtruth-spans --quiet predict --model flag-all --data "$tmp/data/test.jsonl" --out "$tmp/pred.jsonl"
ragtruth-spans evaluate --gold "$tmp/data/test.jsonl" --pred "$tmp/pred.jsonl" --json "$tmp/report.json" >/dev/null
ragtruth-spans --quiet report --gold "$tmp/data/test.jsonl" --pred "$tmp/pred.jsonl" --out "$tmp/report.html"
test -s "$tmp/report.json" && test -s "$tmp/report.html"
if ragtruth-spans predict --model sim-cosine --data "$tmp/data/test.jsonl" --out "$tmp/x.jsonl" 2>"$tmp/err"; then
  echo "sim-cosine ran without the detect extra" >&2; exit 1
fi
grep -qF "pip install 'ragtruth-spans[detect]'" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
# The shipped detector (no --model) is package data, but it needs the detect extra to run: it says so.
if ragtruth-spans detect --context "Opened in 1999." --response "Opened in 1998." --task Summary 2>"$tmp/err"; then
  echo "the shipped detector ran without the detect extra" >&2; exit 1
fi
grep -qF "pip install 'ragtruth-spans[detect]'" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
echo "core-only install: prepare, import, predict (rules), evaluate and report work without torch"
