"""memgraph-tf: Memgraph <-> TensorFlow <-> TensorFlow Serving for graph machine learning.

Importing this package is cheap and needs only the standard library: it must also import inside
Memgraph's embedded Python, where the query-module helper code (``memgraph_tf.blob``,
``memgraph_tf.procedures``) runs. TensorFlow is imported only by the submodules that need it
(``memgraph_tf.ops``, ``memgraph_tf.client``, ``memgraph_tf.serving``).

Where things live:

- ``memgraph_tf.blob`` -- blob format v1 (spec: ``docs/blob-format.md``), pack/unpack.
- ``memgraph_tf.ops`` -- the C++ ``MemgraphTf>UnpackBlob`` op and the op-free decoder.
- ``memgraph_tf.procedures`` -- the library behind ``query_modules/tf_features.py``.
- ``memgraph_tf.embedded`` -- run the unchanged query modules in-process through ``mgp.py``.
- ``memgraph_tf.client`` -- graph sources, OpenCypherDataset, GraphSAGE training, batch inference.
- ``memgraph_tf.serving`` -- SavedModel bundles, REST client, local TF-Serving-compatible server.
"""

__version__ = "0.1.0"

ENV_PREFIX = "MEMGRAPH_TF_"
