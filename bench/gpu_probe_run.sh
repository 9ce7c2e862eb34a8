#!/usr/bin/env bash
# The probe's standard grid on one NVIDIA GPU, in one command, inside 8 minutes:
#
#     bash bench/gpu_probe_run.sh    # rows -> bench/measured/<UTC date>.csv, every point -> .json
#     python -m bench.gpu_probe compare bench/measured/<UTC date>.csv   # then, anywhere
#
# It needs python3 with a CUDA build of PyTorch, and transformers and peft where present.
# Nothing comes from the network and gpuscout is not installed: its folders are laid out as the
# installed package lays them out, as symbolic links in a temporary folder. Wheels found in
# $PROBE_WHEELS (default bench/out/wheels) are installed into that folder first: bitsandbytes
# for the QLoRA points where the machine lacks it, fetched beforehand on a machine with pip:
#
#     python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#         --platform manylinux_2_24_x86_64 -d bench/out/wheels bitsandbytes==0.50.2
#
# The grid stops starting points after its budget (360 s), and the run is killed at
# $PROBE_LIMIT_S (480 s); rows are written as each point ends, so a cut run keeps its rows.
# With $OUT set (a folder that is collected after the run) the files are copied there too.
# Extra arguments go to `python -m bench.gpu_probe run` (e.g. --budget 300).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WHEELS=${PROBE_WHEELS:-bench/out/wheels}
LIMIT_S=${PROBE_LIMIT_S:-480}
DIR=${PROBE_DIR:-bench/measured}

site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --target "$site/wheels" "$WHEELS"/*.whl
fi
# The package-dir mapping of pyproject.toml: faces/ is gpuscout, the other folders its parts.
mkdir -p "$site/pkg/gpuscout"
for f in faces/*; do ln -s "$PWD/$f" "$site/pkg/gpuscout/"; done
for part in core adapters warehouse sizing pipeline flows; do
    ln -s "$PWD/$part" "$site/pkg/gpuscout/$part"
done
export PYTHONPATH="$site/pkg:$site/wheels:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

if command -v nvidia-smi >/dev/null; then nvidia-smi | tee "$site/nvidia-smi.txt"; fi
mkdir -p "$DIR"
shopt -s nullglob
before=("$DIR"/*.csv)
status=0
timeout --kill-after=10 "$LIMIT_S" "$PYTHON" -m bench.gpu_probe run --grid standard \
    --out-dir "$DIR" "$@" 2>&1 | tee "$site/probe.log" || status=$?
after=("$DIR"/*.csv)
if [ "${#after[@]}" -eq "${#before[@]}" ]; then
    echo "no rows were written (exit $status)" >&2
    exit 1
fi
latest=$(ls -t "${after[@]}" | head -n 1)
echo "$(($(wc -l <"$latest") - 1)) rows in $latest (exit $status)"
if [ -n "${OUT:-}" ]; then
    stem=${latest%.csv}
    cp "$latest" "$site/probe.log" "$OUT"/
    [ -f "$stem.json" ] && cp "$stem.json" "$OUT"/
    [ -f "$site/nvidia-smi.txt" ] && cp "$site/nvidia-smi.txt" "$OUT"/
fi
exit "$status"
