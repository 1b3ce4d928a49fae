"""Module attributes imported on first use (PEP 562), so that importing a package stays cheap: a
package's ``__init__`` names its public attributes and the modules that define them, and
``import memgraph_tf.client`` (say) imports neither TensorFlow nor Apache Beam until one of those
attributes is used.

Standard library only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_attributes(
    module_name: str,
    sources: Mapping[str, str],
    namespace: MutableMapping[str, Any],
    *,
    before_import: Callable[[str], None] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the module ``module_name`` whose globals are ``namespace``.

    ``sources`` maps each lazy attribute to the module that defines it under the same name
    (absolute, or relative to ``module_name`` with a leading dot). The first access imports that
    module, stores the value in ``namespace`` (later accesses do not come back here) and returns it;
    ``before_import(source)``, when given, runs first and may raise (a missing optional dependency,
    say). Any other name raises ``AttributeError("module '<module_name>' has no attribute
    '<name>'")``. ``__dir__`` lists the module's globals and the lazy attributes.
    """

    def __getattr__(name: str) -> Any:  # noqa: N807 -- PEP 562's name, shown in tracebacks
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        if before_import is not None:
            before_import(source)
        value = getattr(importlib.import_module(source, module_name), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 -- PEP 562's name, like __getattr__ above
        return sorted(set(namespace) | set(sources))

    return __getattr__, __dir__
