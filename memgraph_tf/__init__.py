"""memgraph-tf: Memgraph <-> TensorFlow <-> TensorFlow Serving for graph machine learning.

Importing this package is cheap and needs only the standard library: it must also import inside
Memgraph's embedded Python, where the query-module helper code (``memgraph_tf.blob``,
``memgraph_tf.procedures``) runs. TensorFlow is imported only by the submodules that need it
(``memgraph_tf.ops``, ``memgraph_tf.client``, ``memgraph_tf.serving``).

Where things live:

- ``memgraph_tf.errors`` -- ``MemgraphTfError``, the root of every error the library raises on
  purpose; its docstring draws the whole tree.
- ``memgraph_tf.blob`` -- blob format v1 (spec: ``docs/blob-format.md``), pack/unpack.
- ``memgraph_tf.layout`` -- the pack/sample blob layout (section names, dtypes, shapes, ``PAD_ID``,
  option names) that the procedures write and the client and serving read.
- ``memgraph_tf.layout`` -- the sections of the ``tf_features`` blobs, option names, ``PAD_ID``.
- ``memgraph_tf.ops`` -- the C++ ``MemgraphTf>UnpackBlob`` op and the op-free decoder.
- ``memgraph_tf.procedures`` -- the library behind ``query_modules/tf_features.py``.
- ``memgraph_tf.embedded`` -- run the unchanged query modules in-process through ``mgp.py``.
- ``memgraph_tf.client`` -- graph sources, OpenCypherDataset, GraphSAGE training, batch inference.
- ``memgraph_tf.serving`` -- SavedModel bundles, REST client, local TF-Serving-compatible server.
- ``memgraph_tf.datasets`` -- the Planetoid datasets (Cora, Citeseer, Pubmed): files and parsing.
- ``memgraph_tf.deploy`` -- ``memgraph-tf install-modules``: copies the query module and the
  stdlib-only helper files above into Memgraph's query-modules directory.

Logging: every module logs to ``logger = logging.getLogger(__name__)``, so the logger names follow
the module tree (``memgraph_tf.client.sources``, ``memgraph_tf.ops._loader``, ...) and
``logging.getLogger("memgraph_tf")`` configures them all (what query modules log through
``mgp.Logger`` in the embedded runtime goes to ``memgraph_tf.embedded.module``). Library code
configures no handlers and does not print; the entry points do (``memgraph_tf.cli``, the demo's
progress lines, the ArcadeDB child process's ``READY`` line).
"""

__version__ = "0.1.0"

ENV_PREFIX = "MEMGRAPH_TF_"
