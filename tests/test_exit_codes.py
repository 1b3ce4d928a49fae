"""The one exit-code table (``memgraph_tf.errors.EXIT_CODES``): every class it names exists, and
``exit_code_for`` takes the most specific entry of an exception's class hierarchy."""

from __future__ import annotations

import builtins
import importlib

import pytest

from memgraph_tf import errors
from memgraph_tf.errors import (
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    exit_code_for,
)


def _resolve(dotted: str) -> type:
    module, _, qualname = dotted.rpartition(".")
    owner = builtins if module == "builtins" else importlib.import_module(module)
    return getattr(owner, qualname)


@pytest.mark.parametrize("dotted", sorted(EXIT_CODES))
def test_every_class_the_table_names_exists(dotted: str) -> None:
    cls = _resolve(dotted)
    assert isinstance(cls, type) and issubclass(cls, BaseException)
    assert f"{cls.__module__}.{cls.__qualname__}" == dotted  # not an alias of a class elsewhere


def test_the_most_specific_entry_wins() -> None:
    from memgraph_tf.client.errors import (
        AuthenticationError,
        ConfigurationError,
        GraphDataError,
        ServerUnavailable,
    )
    from memgraph_tf.serving.errors import BundleError, NotFoundError

    # ConfigurationError and GraphDataError are both ValueErrors: only the first is a usage error
    assert exit_code_for(ConfigurationError("batch_size: expected >= 1")) == EXIT_USAGE
    assert exit_code_for(GraphDataError("node 7: no property 'features'")) == EXIT_FAILED
    assert exit_code_for(AuthenticationError("refused")) == EXIT_USAGE
    assert exit_code_for(ServerUnavailable("no answer")) == EXIT_FAILED  # a ConnectionError
    assert exit_code_for(NotFoundError("no model 'x'", status=404)) == EXIT_USAGE
    assert exit_code_for(BundleError("bad config")) == EXIT_USAGE
    assert exit_code_for(FileNotFoundError(2, "no such file")) == EXIT_USAGE
    assert exit_code_for(ConnectionRefusedError(111, "refused")) == EXIT_FAILED
    assert exit_code_for(ValueError("--shard: expected K/N")) == EXIT_USAGE
    assert exit_code_for(KeyboardInterrupt()) == EXIT_INTERRUPTED


def test_an_error_the_table_does_not_know_is_a_failed_run() -> None:
    assert exit_code_for(RuntimeError("a bug")) == EXIT_FAILED
    assert exit_code_for(errors.MemgraphTfError("anything of ours")) == EXIT_FAILED
