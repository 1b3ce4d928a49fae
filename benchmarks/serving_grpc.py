"""Folded into ``benchmarks/serving.py``, which measures REST and gRPC in one run (``--transports
rest,grpc``, the default). This name is kept for old commands; it runs that script with the same
arguments."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import serving

if __name__ == "__main__":
    sys.exit(serving.main())
