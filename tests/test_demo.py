"""The main job (``memgraph-tf demo``) end to end, shortened: it must keep working as the parts evolve."""

from __future__ import annotations

import pytest

from memgraph_tf import datasets, demo


def test_demo_runs_end_to_end_on_cora(tmp_path, capsys) -> None:
    try:
        datasets.planetoid_root()
    except FileNotFoundError as exc:
        pytest.skip(f"Planetoid files not available: {exc}")
    figures = demo.run("cora", tmp_path, steps=30, classify_count=8)
    out = capsys.readouterr().out
    for step in range(1, 6):
        assert f"[{step}/5]" in out
    assert (tmp_path / "portable" / "GraphSage" / "1" / "saved_model.pb").exists()
    assert (tmp_path / "with_op" / "GraphSage" / "1" / "saved_model.pb").exists()
    assert figures["written"] == 2708
    assert figures["test_accuracy"] > 0.5  # 30 steps: well above the 0.3 of the majority class
    assert figures["served_agreement"] >= 0.75


def test_planetoid_root_error_lists_what_it_tried(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MEMGRAPH_TF_DATASETS", str(tmp_path / "nowhere"))
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "pkg" / "datasets.py"))
    with pytest.raises(FileNotFoundError, match=r"expected ind\.cora\.\* in one of .*nowhere/planetoid, .*nowhere, "):
        datasets.planetoid_root()
