"""A typed model trained with edge features (``edge_feature_spec``: the relationship properties
beside each sampled slot, docs/blob-format.md section 12) keeps its edge encoder in the bundle:
the bundle samples the relationship properties by node_id (``options.edge_feature_spec`` in its
config) and answers over REST and in batch inference exactly as the in-process model; its
signature reads the edge sections."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import blob
from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.serving import bundle
from memgraph_tf.typed_datasets import TRANSFER_STEP, transfer_graph, transfer_spec
from tests.serving.bundle_kit import (
    assert_batch_writes_classes,
    classified_over_rest,
    model_inputs,
    predicted_by_node_id,
)

NN = {TRANSFER_STEP: [4]}
OPTIONS = {"id_property": "id"}
IDS = [0, 5, 17, 199]


@functools.cache
def trained():
    """``(source, TrainResult)``: a short training run on a small transfer graph."""
    from memgraph_tf.client.sources import EmbeddedSource
    from memgraph_tf.client.typed_graphsage import train_typed_graphsage

    source = EmbeddedSource(transfer_graph(200, seed=3))
    result = train_typed_graphsage(
        source,
        "Account",
        NN,
        {"Account": ["features"]},
        options=OPTIONS,
        edge_feature_spec={TRANSFER_STEP: transfer_spec()},
        steps=6,
        batch_size=64,
        eval_every=3,
        hidden_units=8,
        embedding_dim=4,
        class_names=["honest", "fraud"],
        seed=0,
    )
    return source, result


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("edge-bundles")
    return export_bundle(
        trained()[1].model, base, "accounts", 1, use_op=True, sample_options=OPTIONS
    )


def in_process(ids: list[int]) -> np.ndarray:
    """The trained model's probabilities on one sample_typed blob of ``ids`` (inference seed)."""
    source, result = trained()
    model = result.model
    opts = {
        **OPTIONS,
        "label": "Account",
        "seed": bundle.DEFAULT_SEED,
        "edge_feature_spec": {TRANSFER_STEP: transfer_spec()},
    }
    sections = blob.unpack(source.sample_typed(ids, NN, {"Account": ["features"]}, opts))
    inputs = model_inputs(sections, model.input_names())
    assert "edge_cat_h1_s0" in inputs and "edge_has_h1_s0" in inputs
    return tf.nn.softmax(model(inputs, training=False)).numpy()


def test_the_bundle_samples_the_relationship_properties_and_answers_as_in_process(exported):
    source, result = trained()
    config = bundle.read_bundle_config(exported.path)
    spec = LabelSpec.from_dict(transfer_spec()).to_dict()
    assert config.options["edge_feature_spec"] == {TRANSFER_STEP: spec}
    assert {"edge_num_h1_s0", "edge_cat_h1_s0", "edge_has_h1_s0"} <= set(config.sections)
    _, scores = predicted_by_node_id(exported.path, source, IDS, check=1)
    np.testing.assert_allclose(scores, in_process(IDS), rtol=1e-5, atol=1e-6)
    rebuilt = type(result.model).from_config(result.model.get_config())
    assert rebuilt.edge_encoders.keys() == result.model.edge_encoders.keys()


def test_served_by_node_id_over_rest_equals_in_process(exported):
    source, _ = trained()
    got = classified_over_rest(exported.path, source, "accounts", IDS, warmup=True)
    np.testing.assert_allclose(got, in_process(IDS), rtol=1e-5, atol=1e-6)


def test_batch_inference_writes_the_in_process_classes(exported):
    source, result = trained()
    assert_batch_writes_classes(
        source,
        exported.path,
        "edge_class",
        label="Account",
        nodes=200,
        ids=IDS,
        probs=in_process(IDS),
        class_names=result.model.class_names,
    )


BACK_STEP = "(:Account)<-[:TRANSFER]-(:Account)"
UNSORTED_NN = {BACK_STEP: [3], TRANSFER_STEP: [2]}  # (BACK_STEP sorts after TRANSFER_STEP)
BOTH_SPECS = {BACK_STEP: transfer_spec(), TRANSFER_STEP: transfer_spec()}


@pytest.fixture(scope="module")
def unsorted_kit(tmp_path_factory):
    """``(source, model, bundle path)``: an initialised model with edge features on two steps
    listed out of sorted order (different fanouts, both into the ``Account`` table of hop 1),
    and its op bundle. The contract is the plumbing, so the model is not trained."""
    import keras

    from memgraph_tf.client.sources import EmbeddedSource
    from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
    from memgraph_tf.serving.export import export_bundle

    assert list(UNSORTED_NN) != sorted(UNSORTED_NN)
    keras.utils.set_random_seed(0)
    model = TypedGraphSAGE(
        "Account",
        UNSORTED_NN,
        {"Account": 2},
        2,
        hidden_units=8,
        class_names=["honest", "fraud"],
        edge_feature_spec=BOTH_SPECS,
    ).ensure_built()
    model.properties = {"Account": ["features"]}
    base = tmp_path_factory.mktemp("unsorted-edge-bundles")
    info = export_bundle(model, base, "accounts", 1, use_op=True, sample_options=OPTIONS)
    return EmbeddedSource(transfer_graph(200, seed=3)), model, info.path


def unsorted_in_process(source, model) -> np.ndarray:
    """The model's probabilities on one ``sample_typed`` blob of IDS with its own
    ``num_neighbors`` (its step order) and edge specs (inference seed)."""
    opts = {
        **OPTIONS,
        "label": "Account",
        "seed": bundle.DEFAULT_SEED,
        "edge_feature_spec": BOTH_SPECS,
    }
    sections = blob.unpack(source.sample_typed(IDS, UNSORTED_NN, {"Account": ["features"]}, opts))
    return tf.nn.softmax(model(model_inputs(sections, model.input_names()), training=False)).numpy()


def test_a_model_with_edge_features_on_unsorted_steps_serves_by_node_id_as_in_process(
    unsorted_kit,
):
    """The model numbers the steps in the patterns' sorted order, as every sampler does, and the
    bundle keeps it (its config lists the steps as pairs), so the blob it samples by node_id has
    the slot groups and the edge sections ``edge_*_h1_s{i}`` the model reads: REST ``:classify``
    answers as the model in process on ``sample_typed`` with the unsorted ``num_neighbors``."""
    source, model, path = unsorted_kit
    config = bundle.read_bundle_config(path)
    assert list(config.typed["num_neighbors"]) == sorted(UNSORTED_NN)
    assert {"edge_num_h1_s0", "edge_num_h1_s1"} <= set(config.sections)
    slots = [config.sections[f"edge_has_h1_s{i}"][1][1] for i in (0, 1)]
    assert slots == [2, 3]  # the steps' fanouts, in the model's (sorted) order
    got = classified_over_rest(path, source, "accounts", IDS)
    np.testing.assert_allclose(got, unsorted_in_process(source, model), rtol=1e-5, atol=1e-5)


def test_batch_and_beam_sample_the_unsorted_steps_in_the_models_order(unsorted_kit):
    """``classify_graph`` (batch) writes the in-process classes and scores, and a Beam
    pipeline's model spec (the config through its JSON) samples the steps in the model's
    order."""
    from memgraph_tf.beam.models import ModelSpec
    from memgraph_tf.client.sources import EmbeddedSource

    source, model, path = unsorted_kit
    spec = ModelSpec.resolve(bundle=path)
    assert list(spec.sampling().typed_arguments()[0].items()) == sorted(UNSORTED_NN.items())
    assert_batch_writes_classes(
        EmbeddedSource(transfer_graph(200, seed=3)),  # (a fresh graph: the run writes to it)
        path,
        "unsorted_class",
        label="Account",
        nodes=200,
        ids=IDS,
        probs=unsorted_in_process(source, model),
        class_names=model.class_names,
    )
