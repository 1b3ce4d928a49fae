"""The connect timeout of a BoltSource and what a managed transaction retries: a server that cannot
be reached is reported at once (no retry), a reachable server's transient failure is retried for
RETRY_TIME_S by the driver's own retry loop (its ``max_transaction_retry_time``)."""

from __future__ import annotations

from typing import Any

import neo4j
import pytest

from memgraph_tf.client.errors import ConfigurationError, ServerUnavailable
from memgraph_tf.client.sources import (
    DEFAULT_CONNECT_TIMEOUT_S,
    ENV_CONNECT_TIMEOUT,
    RETRY_TIME_S,
    BoltSource,
    connect,
    connect_timeout,
)

URI = "bolt://memgraph.example:7687"
# Memgraph's code for an aborted transaction (a serialization conflict, a deadlock): retry it
# (src/communication/bolt/v1/states/handlers.hpp, ExceptionToErrorMessage)
TRANSIENT = "Memgraph.TransientError.MemgraphError.MemgraphError"


class ScriptedDriver:
    """A driver whose sessions raise the scripted failures in turn, then answer one row; records
    each session's settings."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.sessions: list[dict[str, Any]] = []

    def session(self, **kwargs: Any) -> ScriptedDriver:
        self.sessions.append(kwargs)
        return self

    def __enter__(self) -> ScriptedDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute_read(self, work: Any) -> list[dict[str, Any]]:
        if self.failures:
            raise self.failures.pop(0)
        return [{"x": 1}]

    def close(self) -> None:
        return None


def _retry_times(driver: ScriptedDriver) -> list[float]:
    return [s["max_transaction_retry_time"] for s in driver.sessions]


def test_a_transient_failure_is_retried_by_the_driver_for_the_retry_time():
    conflict = neo4j.exceptions.Neo4jError._hydrate_neo4j(
        code=TRANSIENT, message="Cannot resolve conflicting transactions."
    )
    assert isinstance(conflict, neo4j.exceptions.TransientError)
    driver = ScriptedDriver(conflict)
    source = BoltSource(driver, uri=URI, database=None, connect_timeout_s=2.0)
    assert source.read("RETURN 1 AS x") == [{"x": 1}]
    assert _retry_times(driver) == [0.0, RETRY_TIME_S]  # first without retries, then the driver's
    assert [s["connection_acquisition_timeout"] for s in driver.sessions] == [2.0, 2.0]


@pytest.mark.parametrize(
    "failure",
    [
        neo4j.exceptions.ServiceUnavailable("Couldn't connect to memgraph.example:7687"),
        neo4j.exceptions.SessionExpired("connection lost"),
    ],
)
def test_an_unreachable_server_is_reported_without_a_retry(failure):
    driver = ScriptedDriver(failure)
    source = BoltSource(driver, uri=URI, database=None)
    with pytest.raises(
        ServerUnavailable, match=rf"^{URI}: server unavailable or connection lost while running"
    ):
        source.read("RETURN 1 AS x")
    assert _retry_times(driver) == [0.0]  # one attempt, not retried
    assert driver.sessions[0]["connection_acquisition_timeout"] == DEFAULT_CONNECT_TIMEOUT_S


def test_the_connect_timeout_is_checked(monkeypatch):
    monkeypatch.setenv(ENV_CONNECT_TIMEOUT, "2.5")
    assert connect_timeout() == 2.5
    assert connect_timeout(0.25) == 0.25  # the argument wins
    monkeypatch.delenv(ENV_CONNECT_TIMEOUT)
    assert connect_timeout() == DEFAULT_CONNECT_TIMEOUT_S <= 5.0
    for bad in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv(ENV_CONNECT_TIMEOUT, bad)
        with pytest.raises(
            ConfigurationError,
            match=rf"^{ENV_CONNECT_TIMEOUT}: expected a number of seconds > 0, got '{bad}'$",
        ):
            connect_timeout()
    monkeypatch.delenv(ENV_CONNECT_TIMEOUT)
    for bad in (0, -2.0, True, float("nan"), [5]):
        with pytest.raises(
            ConfigurationError,
            match=r"^connect_timeout_s: expected a number of seconds > 0, got ",
        ):
            connect("bolt://127.0.0.1:9", verify=False, connect_timeout_s=bad)


def test_connect_sets_the_driver_s_timeouts(monkeypatch):
    made = []

    def driver(uri: str, **options: Any) -> ScriptedDriver:
        made.append(options)
        return ScriptedDriver()

    monkeypatch.setattr(neo4j.GraphDatabase, "driver", driver)
    source = connect(URI, verify=False, connect_timeout_s=1.5)
    assert (source.connect_timeout_s, source.retry_time_s) == (1.5, RETRY_TIME_S)
    assert made[-1]["connection_timeout"] == made[-1]["connection_acquisition_timeout"] == 1.5
    assert made[-1]["max_transaction_retry_time"] == RETRY_TIME_S
    source = connect(URI, verify=False, connection_timeout=3.0, max_transaction_retry_time=30.0)
    assert made[-1]["connection_timeout"] == 3.0  # driver_options win
    assert source.retry_time_s == 30.0
