"""Helpers for tests and benchmarks: real servers started from PyPI packages (no mocks).

- ``memgraph_tf.testing.arcadedb`` -- an ArcadeDB Bolt server in its own process.
"""
