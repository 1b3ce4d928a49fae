#!/usr/bin/env bash
# The PyTorch Geometric comparison (benchmarks/peer_pyg.py): creates .venv-pyg once -- CPU
# PyTorch, PyG, torch-scatter and torch-sparse, pinned in benchmarks/peer_pyg-requirements.txt
# and benchmarks/peer_pyg-build-requirements.txt -- then runs the benchmark with the project's venv,
# which starts the PyG side in that venv. Arguments go to benchmarks/peer_pyg.py.
#
#   bash benchmarks/peer_pyg.sh --dataset cora --seeds 0 1 2 3 4
#
# MEMGRAPH_TF_PYG_TORCH_INDEX: the index of CPU torch wheels (default: PyTorch's CPU index; set it
# empty where pip already finds torch==2.13.0+cpu, e.g. through PIP_FIND_LINKS).
# MEMGRAPH_TF_PYG_PYTHON: the Python that creates the venv (default python3; 3.11 matches the pins).
# The venv sits at the repository root (ignored by git), outside the trees the lint test scans.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-pyg
index="${MEMGRAPH_TF_PYG_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
if ! "$venv/bin/python" -c "import torch_geometric, torch_sparse" 2>/dev/null; then
    echo "creating $venv (torch-scatter, torch-sparse: built from source, tens of minutes)" >&2
    "${MEMGRAPH_TF_PYG_PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/pip" install ${index:+--extra-index-url "$index"} -r benchmarks/peer_pyg-requirements.txt
    # CFLAGS: no debug info (the link strips it anyway, -s), NDEBUG as in a release build
    CFLAGS="${CFLAGS--g0 -DNDEBUG}" MAX_JOBS="${MAX_JOBS:-2}" FORCE_ONLY_CPU=1 \
        "$venv/bin/pip" install --no-build-isolation -r benchmarks/peer_pyg-build-requirements.txt
fi
if [ ! -x .venv/bin/python ]; then
    echo "no .venv: run bash scripts/bootstrap.sh first" >&2
    exit 2
fi
exec .venv/bin/python benchmarks/peer_pyg.py --pyg-python "$venv/bin/python" "$@"
