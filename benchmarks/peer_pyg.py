"""Training GraphSAGE here and in PyTorch Geometric -- the same graph, fanouts, batch size, steps
and evaluation schedule, timed in one run.

    bash benchmarks/peer_pyg.sh --dataset cora --seeds 0 1 2 3 4     # creates .venv-pyg
    .venv/bin/python benchmarks/peer_pyg.py --skip-pyg               # our side alone

Our side: ``train_graphsage`` with ``PLANETOID_RECIPE`` over the embedded runtime (neighbourhoods
from the unchanged ``tf_features.sample`` procedure every step, features from a feature cache
packed once through ``tf_features.pack``). The peer: ``torch_geometric.loader.NeighborLoader`` +
``SAGEConv`` on CPU, in its own virtual environment (PyTorch is no dependency of this package), run
as a subprocess of this same invocation on the same graph (written to a temporary ``.npz``), so the
ratio comes from one run on one machine state.

The same work on both sides: fanouts (10, 10) sampled without replacement over the undirected
graph, batches of 140 shuffled training nodes, up to ``--steps`` steps, validation accuracy every
10 steps averaged over 4 neighbourhood draws, patience 80 steps, the best validation weights
restored; test accuracy averaged over 5 draws. Model: two mean-aggregator layers, 128 units,
dropout 0.6, L2 5e-4, row-normalised features, L2-normalised hidden layers, Adam 0.005 (ours
concatenates the self and neighbour transforms, ``SAGEConv`` adds them: the same multiply count in
the first layer).

Each side first runs a short warm-up training (imports, kernels, thread pools), then one timed run
per seed. Per side it prints wall time per phase -- sampling (the time the training loop waited for
a batch; PyG's loader samples in the loop, ours in background ``tf.data`` threads), optimisation
steps, evaluation (validation, its sampling included) -- the training wall time, the time to the
best validation accuracy, the test accuracy, and ours / PyG for each, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_PYG_PYTHON = REPO / ".venv-pyg" / "bin" / "python"
PHASES = ("train_s", "sampling_s", "steps_s", "eval_s", "to_best_s")


# ------------------------------------------------------------------------------------------------
# the PyG side (runs in .venv-pyg: torch and torch_geometric only, no memgraph_tf)
# ------------------------------------------------------------------------------------------------


def _pyg_side(npz_path: str, config: dict) -> None:
    import copy

    import numpy as np
    import torch
    import torch.nn.functional as F  # noqa: N812 -- torch's own convention
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import SAGEConv
    from torch_geometric.utils import to_undirected

    torch.set_num_threads(config["threads"])
    arrays = np.load(npz_path)
    x = torch.from_numpy(arrays["features"]).float()
    x = x / x.sum(dim=1, keepdim=True).clamp(min=1e-12)  # row-normalised, as ours
    edges = torch.from_numpy(arrays["edges"]).long().t()
    data = Data(
        x=x,
        y=torch.from_numpy(arrays["labels"]).long(),
        edge_index=to_undirected(edges, num_nodes=x.shape[0]),
    )
    split = {k: torch.from_numpy(arrays[k]).long() for k in ("train", "val", "test")}
    fanouts = list(config["fanouts"])

    class Sage(torch.nn.Module):
        def __init__(self, width: int, units: int, classes: int, dropout: float) -> None:
            super().__init__()
            self.convs = torch.nn.ModuleList(
                [SAGEConv(width, units), *[SAGEConv(units, units) for _ in fanouts[1:]]]
            )
            self.out = torch.nn.Linear(units, classes)
            self.dropout = dropout

        def forward(self, h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
            for conv in self.convs:
                h = F.dropout(h, self.dropout, self.training)
                h = F.normalize(F.relu(conv(h, edge_index)), dim=-1)
            return self.out(F.dropout(h, self.dropout, self.training))

    def loader(ids: torch.Tensor, batch_size: int, shuffle: bool) -> NeighborLoader:
        return NeighborLoader(
            data, num_neighbors=fanouts, batch_size=batch_size, input_nodes=ids, shuffle=shuffle
        )

    # the evaluation loaders are built once, as ours builds its pipelines once per run; each pass
    # over one samples anew
    eval_loaders = {k: loader(split[k], config["eval_batch_size"], False) for k in ("val", "test")}

    def predict(model: Sage, part: str, draws: int) -> float:
        ids = split[part]
        model.eval()
        total = torch.zeros(len(ids), int(data.y.max()) + 1)
        with torch.no_grad():
            for _ in range(draws):
                parts = []
                for batch in eval_loaders[part]:
                    logits = model(batch.x, batch.edge_index)[: batch.batch_size]
                    parts.append(torch.softmax(logits, dim=-1))
                total += torch.cat(parts)
        model.train()
        return float((total.argmax(dim=1) == data.y[ids]).float().mean())

    def train(seed: int, steps: int) -> dict:
        torch.manual_seed(seed)
        model = Sage(x.shape[1], config["hidden_units"], int(data.y.max()) + 1, config["dropout"])
        optimizer = torch.optim.Adam(
            model.parameters(), lr=config["learning_rate"], weight_decay=config["l2"]
        )
        train_loader = loader(split["train"], config["batch_size"], True)
        times = {"sampling_s": 0.0, "steps_s": 0.0, "eval_s": 0.0}
        best = (-1.0, 0, None, 0.0)  # accuracy, step, weights, seconds
        started = time.perf_counter()
        step, batches = 0, iter(train_loader)
        while step < steps:
            t0 = time.perf_counter()
            batch = next(batches, None)
            if batch is None:  # an epoch is over: the loader reshuffles
                batches = iter(train_loader)
                continue
            t1 = time.perf_counter()
            optimizer.zero_grad()
            logits = model(batch.x, batch.edge_index)[: batch.batch_size]
            loss = F.cross_entropy(logits, batch.y[: batch.batch_size])
            loss.backward()
            optimizer.step()
            float(loss.detach())
            step += 1
            t2 = time.perf_counter()
            times["sampling_s"] += t1 - t0
            times["steps_s"] += t2 - t1
            if step % config["eval_every"] == 0 or step == steps:
                val = predict(model, "val", config["eval_draws"])
                times["eval_s"] += time.perf_counter() - t2
                if val > best[0]:
                    seconds = time.perf_counter() - started
                    best = (val, step, copy.deepcopy(model.state_dict()), seconds)
                elif step - best[1] >= config["patience"]:
                    break
        train_s = time.perf_counter() - started
        model.load_state_dict(best[2])
        test = predict(model, "test", config["test_draws"])
        return dict(
            times,
            train_s=train_s,
            to_best_s=best[3],
            steps=step,
            best_step=best[1],
            best_val=best[0],
            test_accuracy=test,
        )

    train(config["seeds"][0], config["warmup_steps"])
    for seed in config["seeds"]:
        print(json.dumps(dict(train(seed, config["steps"]), seed=seed)), flush=True)


# ------------------------------------------------------------------------------------------------
# our side and the report (runs in the project's venv)
# ------------------------------------------------------------------------------------------------


def _ours(data, config: dict, log) -> list[dict]:
    from memgraph_tf.client import EmbeddedSource, evaluate, train_graphsage
    from memgraph_tf.client.graphsage import PLANETOID_RECIPE, build_feature_cache
    from memgraph_tf.datasets import planetoid_graph

    source = EmbeddedSource(planetoid_graph(data))
    t0 = time.perf_counter()
    cache = build_feature_cache(source, ["features"], {})
    log(f"ours: feature cache of {len(cache.ids)} nodes in {time.perf_counter() - t0:.1f} s")
    train_ids, val_ids = data.ids("train"), data.ids("val")
    test_ids = [i for i in data.ids("test") if data.labels[i] >= 0]
    recipe = dict(PLANETOID_RECIPE, steps=config["steps"])

    def run(seed: int, steps: int) -> dict:
        t0 = time.perf_counter()
        result = train_graphsage(
            source, train_ids, val_ids, feature_cache=cache, seed=seed, **dict(recipe, steps=steps)
        )
        train_s = time.perf_counter() - t0
        h = result.history
        best = h["eval_step"].index(result.best_step) if result.best_step in h["eval_step"] else -1
        test = evaluate(
            result.model,
            source,
            test_ids,
            feature_cache=cache,
            draws=config["test_draws"],
            seed=10_000 + seed,
        )["accuracy"]
        return {
            "train_s": train_s,
            "sampling_s": sum(h["wait_s"]),
            "steps_s": sum(h["step_s"]),
            "eval_s": sum(h["eval_s"]),
            "to_best_s": h["elapsed_s"][best] if best >= 0 else train_s,
            "steps": len(h["step"]),
            "best_step": result.best_step,
            "best_val": result.best_val_accuracy,
            "test_accuracy": test,
            "seed": seed,
        }

    run(config["seeds"][0], config["warmup_steps"])
    out = []
    for seed in config["seeds"]:
        out.append(run(seed, config["steps"]))
        log("ours " + json.dumps(out[-1]))
    return out


def _pyg(data, config: dict, python: str, log) -> tuple[list[dict], str | None]:
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="peer-pyg-") as tmp:
        path = pathlib.Path(tmp) / "graph.npz"
        np.savez(
            path,
            features=np.asarray(data.features, dtype=np.float32),
            labels=np.maximum(np.asarray(data.labels, dtype=np.int64), 0),
            edges=np.asarray(data.edges, dtype=np.int64).reshape(-1, 2),
            train=np.asarray(data.ids("train"), dtype=np.int64),
            val=np.asarray(data.ids("val"), dtype=np.int64),
            test=np.asarray([i for i in data.ids("test") if data.labels[i] >= 0], dtype=np.int64),
        )
        proc = subprocess.run(
            [python, __file__, "--pyg-side", str(path), json.dumps(config)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        return [], proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no output"
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    for row in rows:
        log("pyg " + json.dumps(row))
    return rows, None


def _mean(rows: list[dict], key: str) -> float:
    return statistics.fmean(r[key] for r in rows)


def _spread(rows: list[dict], key: str) -> float:
    return statistics.stdev(r[key] for r in rows) if len(rows) > 1 else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="cora", choices=["cora", "citeseer"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=200, help="the recipe's steps (default 200)")
    parser.add_argument("--warmup-steps", type=int, default=11)
    parser.add_argument("--test-draws", type=int, default=5)
    parser.add_argument(
        "--pyg-python",
        default=str(DEFAULT_PYG_PYTHON),
        help="the Python of the PyG environment (made by benchmarks/peer_pyg.sh)",
    )
    parser.add_argument("--skip-pyg", action="store_true", help="our side only")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--pyg-side", nargs=2, metavar=("NPZ", "CONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pyg_side:
        _pyg_side(args.pyg_side[0], json.loads(args.pyg_side[1]))
        return 0

    from memgraph_tf.client.graphsage import PLANETOID_RECIPE
    from memgraph_tf.datasets import load_dataset

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    load_before = os.getloadavg()
    data = load_dataset(args.dataset)
    recipe = PLANETOID_RECIPE
    config = {
        "seeds": args.seeds,
        "steps": args.steps,
        "warmup_steps": args.warmup_steps,
        "test_draws": args.test_draws,
        "threads": args.threads,
        "eval_batch_size": 512,
        **{
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in recipe.items()
            if k
            in (
                "fanouts",
                "hidden_units",
                "dropout",
                "l2",
                "learning_rate",
                "batch_size",
                "eval_every",
                "eval_draws",
                "patience",
            )
        },
    }
    print(
        f"{args.dataset}: {data.num_nodes} nodes, {len(data.edges)} undirected edges; fanouts "
        f"{config['fanouts']}, batch {config['batch_size']}, up to {args.steps} steps, validation "
        f"every {config['eval_every']} steps over {config['eval_draws']} draws; seeds "
        f"{args.seeds}; load average {load_before[0]:.2f} on {os.cpu_count()} cores",
        flush=True,
    )
    ours = _ours(data, config, log)
    pyg: list[dict] = []
    why = "skipped (--skip-pyg)"
    if not args.skip_pyg:
        if not pathlib.Path(args.pyg_python).exists():
            why = f"{args.pyg_python} not found: run bash benchmarks/peer_pyg.sh"
        else:
            pyg, error = _pyg(data, config, args.pyg_python, log)
            why = f"the PyG side failed: {error}" if error else ""
    load_after = os.getloadavg()

    header = f"{'':22}{'ours':>16}" + (f"{'PyG':>20}{'ours / PyG':>12}" if pyg else "")
    print(header)
    labels = {
        "train_s": "training wall (s)",
        "sampling_s": "  sampling wait (s)",
        "steps_s": "  steps (s)",
        "eval_s": "  evaluation (s)",
        "to_best_s": "to best val (s)",
        "steps": "steps run",
        "best_val": "best val accuracy",
        "test_accuracy": "test accuracy",
    }
    figures: dict[str, dict] = {}
    for key, label in labels.items():
        line = f"{label:22}{_mean(ours, key):>9.3f} +- {_spread(ours, key):<7.3f}"
        figures[key] = {"ours": _mean(ours, key), "ours_spread": _spread(ours, key)}
        if pyg:
            ratio = _mean(ours, key) / max(_mean(pyg, key), 1e-9)
            line += f"{_mean(pyg, key):>9.3f} +- {_spread(pyg, key):<7.3f}{ratio:>12.2f}"
            figures[key].update(pyg=_mean(pyg, key), pyg_spread=_spread(pyg, key), ratio=ratio)
        print(line)
    if why:
        print(f"PyG: {why}")
    print(
        f"load average {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end "
        f"({os.cpu_count()} cores); means +- standard deviation over {len(args.seeds)} seeds"
    )
    if args.json:
        pathlib.Path(args.json).write_text(
            json.dumps(
                {
                    "dataset": args.dataset,
                    "config": config,
                    "load_average": [load_before[0], load_after[0]],
                    "ours": ours,
                    "pyg": pyg,
                    "figures": figures,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
