"""A signature function called on its flat inputs (``input_specs.flat_call``): the server's model
calls skip TensorFlow's keyword binding when the tensors fit the function's input specs, answer
exactly what the function's own call answers, and leave every tensor that does not fit to that
call (and its errors)."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving import input_specs
from tests.serving.conftest import toy_in_process


@pytest.fixture(scope="module")
def toy_functions(toy_base):
    import tensorflow as tf

    loaded = tf.saved_model.load(str(toy_base / "1"))
    return loaded, loaded.signatures


def test_flat_call_answers_what_the_function_answers(toy_functions):
    import tensorflow as tf

    _, signatures = toy_functions
    fn = signatures["serving_default"]
    flat = input_specs.flat_call(fn)
    assert flat is not None and flat.names == ["x"]
    assert input_specs.flat_call(fn) is flat  # planned once per function
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got, want = flat({"x": x}, {"x": (2, 3)}), fn(x=x)
    assert sorted(got) == sorted(want) == ["label_bytes", "logits"]
    for key in want:
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())

    serialized = tf.constant(
        [
            tf.train.Example(
                features=tf.train.Features(
                    feature={"x": tf.train.Feature(float_list=tf.train.FloatList(value=[1, 2, 3]))}
                )
            ).SerializeToString()
        ]
    )
    classify = signatures["classify"]
    got = input_specs.flat_call(classify)({"inputs": serialized}, {"inputs": (1,)})
    np.testing.assert_array_equal(got["scores"].numpy(), classify(inputs=serialized)["scores"])


@pytest.mark.parametrize(
    ("tensors", "shapes"),
    [
        ({"x": [[1.0, 2.0, 3.0, 4.0]]}, {"x": (1, 4)}),  # a fixed dimension differs
        ({"x": [1.0, 2.0, 3.0]}, {"x": (3,)}),  # another rank
        ({"x": np.array([[1.0, 2.0, 3.0]], np.float64)}, {"x": (1, 3)}),  # another dtype
        ({"y": [[1.0, 2.0, 3.0]]}, {"y": (1, 3)}),  # another name
        ({"x": [[1.0, 2.0, 3.0]], "y": [[1.0]]}, {"x": (1, 3), "y": (1, 1)}),  # one too many
    ],
)
def test_tensors_that_do_not_fit_are_declined(toy_functions, tensors, shapes):
    import tensorflow as tf

    _, signatures = toy_functions
    flat = input_specs.flat_call(signatures["serving_default"])
    assert flat({k: tf.constant(v) for k, v in tensors.items()}, shapes) is None


def test_inputs_of_unknown_rank_take_any_shape(any_rank_base):
    import tensorflow as tf

    fn = tf.saved_model.load(str(any_rank_base / "1")).signatures["serving_default"]
    flat = input_specs.flat_call(fn)
    s, f = tf.constant([[[b"a"]], [[b"b"]]]), tf.constant([[1.0, 2.0], [3.0, 4.0]])
    got = flat({"s": s, "f": f}, {"s": (2, 1, 1), "f": (2, 2)})
    assert got["f_sum"].numpy() == 10.0
    assert got["s_out"].numpy().tolist() == [[[b"a"]], [[b"b"]]]


def test_the_server_calls_fitting_tensors_flat_and_leaves_the_rest(toy_base, recorded_calls):
    from memgraph_tf.serving.model_server import ModelServer

    ms = ModelServer(toy_base, "toy", warmup=False)
    try:
        mv = ms.resolve("toy", 1, None)
        x = np.array([[1.0, 2.0, 3.0]], np.float32)
        with recorded_calls(input_specs.FlatCall, "__call__", lambda _, t, s: dict(s)) as seen:
            out = ms.run_predict(mv, {"x": x})
            assert seen == [{"x": (1, 3)}]
            np.testing.assert_allclose(out["logits"], toy_in_process(1, x), rtol=1e-5)
            # declined by the flat call: the function's own call runs it, and TensorFlow
            # refuses it inside the graph (400)
            with pytest.raises(
                ServingFailure, match=r"Matrix size-incompatible: In\[0\]: \[1,4\]"
            ) as info:
                ms.run_predict(mv, {"x": np.zeros((1, 4), np.float32)})
        assert info.value.status == 400
        assert seen[-1] == {"x": (1, 4)}
    finally:
        ms.close()
