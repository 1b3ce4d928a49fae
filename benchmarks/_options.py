"""The command line of a benchmark whose options are mostly plain numbers (hub_serving.py,
unpack.py). Imported from beside them (the script's directory is on sys.path)."""

from __future__ import annotations

import argparse


def number_options(doc: str | None, **defaults: int | float) -> argparse.ArgumentParser:
    """A parser with one option ``--NAME`` per keyword (``_`` written ``-``), of its default's
    type, with that default; ``--help`` shows ``doc`` (the script's docstring) as written."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for name, default in defaults.items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    return parser
