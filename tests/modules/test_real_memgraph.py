"""The same tf_features cases against a real Memgraph over Bolt (neo4j driver).

Runs when ``MEMGRAPH_TF_TEST_MEMGRAPH_URI`` (e.g. ``bolt://localhost:7687``) names a Memgraph whose
query-modules directory holds ``memgraph-tf install-modules`` output (docker/compose.yaml does
that); optional ``MEMGRAPH_TF_TEST_MEMGRAPH_USER`` / ``MEMGRAPH_TF_TEST_MEMGRAPH_PASSWORD``. The
cases wipe the database they run on.
"""

from __future__ import annotations

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import pytest

from tests.real_memgraph import AUTH, MARKS, URI

pytestmark = MARKS


@pytest.fixture(scope="module")
def driver():
    import neo4j

    drv = neo4j.GraphDatabase.driver(URI, auth=AUTH)
    try:
        with drv.session() as s:
            s.run("CALL mg.load_all()").consume()
            names = {r["name"] for r in s.run("CALL mg.procedures() YIELD name RETURN name")}
        missing = {
            "tf_features.pack",
            "tf_features.sample",
            "tf_features.sample_per_node",
            "tf_features.describe",
        } - names
        assert not missing, (
            f"{URI}: expected the tf_features procedures, got none of {sorted(missing)}; run "
            "`memgraph-tf install-modules <query-modules dir>` (docker/compose.yaml mounts "
            "docker/query_modules)"
        )
        yield drv
    finally:
        drv.close()


class TestMemgraph(cases.RunnerTests):
    @pytest.fixture
    def runner(self, driver):
        return cases.BoltRunner(driver)
