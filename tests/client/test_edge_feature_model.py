"""The typed GraphSAGE with edge features (``edge_feature_spec``): the encoded relationship
properties of each neighbour join its message before the mean -- the model reads them, ignores
those of padded slots, names them among its inputs with the blob's shapes, rebuilds from its
config, and refuses a bad spec naming the pattern."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import layout
from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.typed_datasets import TRANSFER_STEP, transfer_spec

NN = {TRANSFER_STEP: [3, 2]}


def model(**kwargs):
    m = TypedGraphSAGE(
        "Account",
        NN,
        {"Account": 2},
        2,
        hidden_units=4,
        dropout=0.0,
        embedding_dim=3,
        edge_feature_spec={TRANSFER_STEP: transfer_spec()},
        **kwargs,
    )
    return m.ensure_built()


def inputs(rng, amount=None, channel="wire"):
    """Inputs for 2 seeds: every hop-1 slot filled, hop 2's last slot of each parent padded."""
    out = {
        "features_h0_Account": rng.normal(size=(2, 1, 2)).astype("float32"),
        "features_h1_Account": rng.normal(size=(2, 3, 2)).astype("float32"),
        "features_h2_Account": rng.normal(size=(2, 6, 2)).astype("float32"),
        "mask_h1_Account": np.ones((2, 3), bool),
        "mask_h2_Account": np.tile([True, False], (2, 3)),
    }
    for h, g in ((1, 3), (2, 6)):
        num = rng.normal(size=(2, g, 1)).astype("float32") if amount is None else amount(h, g)
        out[f"edge_num_h{h}_s0"] = num
        out[f"edge_cat_h{h}_s0"] = tf.constant([[[channel]] * g] * 2)
        out[f"edge_has_h{h}_s0"] = np.ones((2, g, 2), bool)
    return out


def test_the_edge_sections_are_inputs_with_the_blobs_shapes():
    m = model()
    edge_names = [n for n in m.input_names() if n.startswith("edge_")]
    spec = m.spec
    widths = {spec.steps[0]: layout.raw_widths(m.edge_encoders[TRANSFER_STEP].spec)}
    sections = layout.typed_sample_sections(spec, {"Account": 2}, batch=5, edges=widths)
    assert edge_names == [s.name for s in sections if s.name.startswith("edge_")]
    shapes = m.input_shapes(5)
    for s in sections:
        if s.name.startswith("edge_"):
            assert shapes[s.name] == s.shape
    rebuilt = TypedGraphSAGE.from_config(m.get_config())
    assert rebuilt.get_config() == m.get_config()
    assert list(rebuilt.edge_encoders) == [TRANSFER_STEP]


def test_the_model_reads_the_relationship_properties_of_filled_slots_only():
    m = model()
    rng = np.random.default_rng(0)
    base = inputs(rng)
    logits = m(base).numpy()
    other = dict(base, edge_cat_h1_s0=tf.constant([[["card"]] * 3] * 2))
    assert not np.allclose(m(other).numpy(), logits)  # another channel, other scores
    padded = dict(base)
    num = base["edge_num_h2_s0"].copy()
    num[:, 1::2] = 1e6  # the padded slots of hop 2
    padded["edge_num_h2_s0"] = num
    np.testing.assert_allclose(m(padded).numpy(), logits, rtol=1e-6)
    with pytest.raises(ConfigurationError, match=r"inputs: missing edge_num_h1_s0"):
        m({k: v for k, v in base.items() if k != "edge_num_h1_s0"})


@pytest.mark.parametrize(
    ("edge_spec", "message"),
    [
        (
            {"(:Account)-[:PAYS]->(:Account)": transfer_spec()},
            r"edge_feature_spec\['\(:Account\)-\[:PAYS\]->\(:Account\)'\]: expected one of the "
            r"steps \(\(:Account\)-\[:TRANSFER\]->\(:Account\)\)",
        ),
        (
            {TRANSFER_STEP: {**transfer_spec(), "label": "PAYS"}},
            r"expected the spec of relationship type 'TRANSFER', got label 'PAYS'",
        ),
        (
            {
                TRANSFER_STEP: {
                    "label": "TRANSFER",
                    "properties": [{"name": "a", "kind": "required"}],
                }
            },
            r"expected no 'required' property",
        ),
        ({"(:Account)": transfer_spec()}, r"edge_feature_spec: edge step: expected a pattern"),
    ],
)
def test_a_bad_edge_spec_is_refused_naming_the_pattern(edge_spec, message):
    with pytest.raises(ConfigurationError, match=message):
        TypedGraphSAGE("Account", NN, {"Account": 2}, 2, edge_feature_spec=edge_spec)


def test_the_homogeneous_graphsage_refuses_edge_features_naming_the_typed_model():
    from memgraph_tf.client.graphsage import GraphSAGE

    with pytest.raises(ConfigurationError, match=r"use TypedGraphSAGE with a typed step"):
        GraphSAGE([2], 3, 2, edge_feature_spec={TRANSFER_STEP: transfer_spec()})
