"""Learned per-node embeddings (the transductive option for a label without features): a table
keyed by node key, with one shared out-of-vocabulary vector for every node not in it.

:class:`NodeEmbedding` maps a tensor of node keys (``ids_h{h}_{label}`` sections of a blob, any
shape) to vectors ``[..., dimension]``: the key's own row when the key is among :attr:`keys`
(set once, from the nodes seen in training), else row 0, the **shared out-of-vocabulary vector**
(learned too: it is what every node unseen in training -- added later, or without a training
edge -- is given; the model still reads such a node's neighbourhood and any features it has). The
keys are a non-trainable int64 weight, so the table and its vocabulary travel in the model's
weights and its SavedModel, and the lookup is plain TensorFlow (``searchsorted``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from memgraph_tf.errors import ConfigurationError

__all__ = ["NodeEmbedding", "embedding_keys"]


def embedding_keys(keys: Any, name: str = "keys") -> np.ndarray:
    """``keys`` as a sorted array of distinct int64 node keys; :class:`ConfigurationError`
    naming ``name`` for anything but integers, or none."""
    arr = np.asarray(keys)
    if arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ConfigurationError(
            f"{name}: expected a non-empty list of integer node keys, got {arr.dtype} of "
            f"{arr.size} values"
        )
    return np.unique(arr.astype(np.int64).ravel())


class NodeEmbedding(keras.layers.Layer):
    """A learned vector per node key (``size`` keys, ``dimension`` wide) and one shared vector
    for every other key (module docstring).

    Guarantees: ``layer(ids)`` has shape ``ids.shape + [dimension]``, float32; a key equal to one
    of :attr:`keys` gets row ``1 + its position`` among them, any other key (padding included)
    row 0; the same weights give the same vectors in eager, traced and exported calls."""

    def __init__(self, size: int, dimension: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for what, value in (("size", size), ("dimension", dimension)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ConfigurationError(
                    f"node_embeddings: {what}: expected an integer >= 1, got {value!r}"
                )
        self.size = int(size)
        self.dimension = int(dimension)

    def build(self, input_shape: Any = None) -> None:
        """The keys (int64, non-trainable, zeros until :meth:`set_keys`) and the table
        ``[size + 1, dimension]`` (row 0: the out-of-vocabulary vector)."""
        self.keys = self.add_weight(
            name="keys", shape=(self.size,), dtype="int64", initializer="zeros", trainable=False
        )
        self.table = self.add_weight(
            name="table",
            shape=(self.size + 1, self.dimension),
            initializer=keras.initializers.RandomNormal(stddev=0.1),
        )
        self.built = True

    def set_keys(self, keys: Sequence[int] | np.ndarray) -> None:
        """Sets the vocabulary: exactly :attr:`size` distinct integer keys (sorted here)."""
        if not self.built:
            self.build()
        arr = embedding_keys(keys)
        if len(arr) != self.size:
            raise ConfigurationError(
                f"node_embeddings: expected {self.size} distinct keys, got {len(arr)}"
            )
        self.keys.assign(arr)

    def rows(self, ids: Any) -> Any:
        """The table row of each key in ``ids`` (int32, the shape of ``ids``)."""
        flat = tf.reshape(tf.cast(ids, tf.int64), [-1])
        keys = tf.convert_to_tensor(self.keys)
        pos = tf.searchsorted(keys, flat, side="left")
        pos = tf.minimum(pos, self.size - 1)
        hit = tf.equal(tf.gather(keys, pos), flat)
        row = tf.where(hit, pos + 1, tf.zeros_like(pos))
        return tf.reshape(tf.cast(row, tf.int32), tf.shape(ids))

    def call(self, ids: Any) -> Any:
        return tf.gather(tf.convert_to_tensor(self.table), self.rows(ids))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "size": self.size, "dimension": self.dimension}
