"""The README's Python snippets run as written, in order, in one namespace (a later snippet uses
what an earlier one made), in a scratch folder, on the data shipped in the package."""

from __future__ import annotations

import ast
import re

import pytest

SNIPPET = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _snippets(repo_root) -> list[str]:
    return SNIPPET.findall((repo_root / "README.md").read_text(encoding="utf-8"))


def test_readme_has_the_tour_snippets(repo_root) -> None:
    code = "\n".join(_snippets(repo_root))
    for needed in (
        'graph.call("tf_features.pack"',
        "train_graphsage(",
        "export_bundle(",
        "predict_and_write(",
        "blob.pack(",
    ):
        assert needed in code, needed


@pytest.mark.slow
def test_readme_python_snippets_run(repo_root, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme"}
    shown = {}  # snippet text -> the value of its last line, when that is an expression
    for i, code in enumerate(_snippets(repo_root)):
        name = f"README.md python snippet {i + 1}"
        tree = ast.parse(code, name)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:  # run as written; its value kept, as a notebook would show it
            shown[code] = eval(compile(ast.Expression(last.value), name, "eval"), namespace)
    # what the tour's comments promise
    assert namespace["row"]["count"] == 2 and namespace["row"]["blob"].startswith("TUdURgEAAAAC")
    # the tour's own evaluate(...) call, its last line (not a second evaluation)
    [evaluated] = [v for code, v in shown.items() if "train_graphsage(" in code]
    assert evaluated["accuracy"] > 0.7  # 60 steps; chance is 0.32 (the largest class)
    assert (tmp_path / "models" / "GraphSage" / "1" / "saved_model.pb").is_file()
    assert namespace["graph"].get_property(1708, "predicted_class") in namespace["data"].class_names
    assert namespace["x"].numpy().tolist() == [[1.5, -2.0], [0.25, 3.0]]
