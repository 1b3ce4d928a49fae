"""memgraph-tf: Memgraph <-> TensorFlow <-> TensorFlow Serving for graph machine learning.

Importing this package is cheap and needs only the standard library: it must also import inside
Memgraph's embedded Python, where the query-module helper code (``memgraph_tf.blob``,
``memgraph_tf.procedures``) runs. TensorFlow is imported only by the submodules that need it
(``memgraph_tf.ops``, ``memgraph_tf.client``, ``memgraph_tf.serving``).

Where things live:

- ``memgraph_tf.errors`` -- ``MemgraphTfError`` and the error classes of the client and serving
  layers, the exit-code and TF Serving status tables; its docstring draws the whole tree.
- ``memgraph_tf.blob`` -- blob format v1 (spec: ``docs/blob-format.md``), pack/unpack.
- ``memgraph_tf.layout`` -- the sections of the ``tf_features`` blobs (names, dtypes, shapes),
  option names, ``PAD_ID``: what the procedures write and the client and serving read.
- ``memgraph_tf.typed_sampling`` -- the typed sampling spec (edge steps, ``num_neighbors`` per hop)
  and its per-hop, per-label slot tables.
- ``memgraph_tf.feature_spec`` -- per-label feature specs (property kinds and encodings).
- ``memgraph_tf.ops`` -- the C++ ``MemgraphTf>UnpackBlob`` op and the op-free decoder.
- ``memgraph_tf.procedures`` -- the library behind ``query_modules/tf_features.py``.
- ``memgraph_tf.embedded`` -- run the unchanged query modules in-process through ``mgp.py``.
- ``memgraph_tf.datasets``, ``memgraph_tf.typed_datasets`` -- the Planetoid datasets (Cora,
  Citeseer) and the generated graphs (synthetic, shop) with their known answers.
- ``memgraph_tf.client`` -- graph sources, OpenCypherDataset, GraphSAGE models and training,
  in-process inference.
- ``memgraph_tf.serving`` -- SavedModel bundles, REST and gRPC clients, the TF-Serving-compatible
  server and the node-id gateway.
- ``memgraph_tf.batch`` -- batch inference and link scoring with write-back
  (``memgraph-tf classify``, ``score-links``).
- ``memgraph_tf.beam`` -- the same on Apache Beam (the ``beam`` extra).
- ``memgraph_tf.deploy`` -- ``memgraph-tf install-modules``: copies the query module and the
  stdlib-only helper files above into Memgraph's query-modules directory.
- ``memgraph_tf.cli``, ``memgraph_tf.demo``, ``memgraph_tf.report`` -- the ``memgraph-tf``
  command, the demo and its report.

Logging: every module logs to ``logger = logging.getLogger(__name__)``, so the logger names follow
the module tree (``memgraph_tf.client.sources``, ``memgraph_tf.ops._loader``, ...) and
``logging.getLogger("memgraph_tf")`` configures them all (what query modules log through
``mgp.Logger`` in the embedded runtime goes to ``memgraph_tf.embedded.module``). Library code
configures no handlers and does not print; the entry points do (``memgraph_tf.cli``, the demo's
progress lines, the ArcadeDB child process's ``READY`` line).
"""

__version__ = "0.1.0"

ENV_PREFIX = "MEMGRAPH_TF_"
