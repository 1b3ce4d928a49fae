"""Running the pipelines: runner and options (Beam's DirectRunner without its Prism detour, Beam's
DaskRunner on a ``dask.distributed`` cluster, Flink, Spark, Dataflow), :func:`classify_with_beam`
(Python) and the ``memgraph-tf classify --runner`` hooks :func:`add_runner_arguments` /
:func:`run_classify_pipeline`.

This module imports only the standard library at import time, so the command line can offer
``--runner`` without Apache Beam installed; Beam is imported when a pipeline is built.

``DirectRunner`` here means Beam's portable FnApiRunner with ``direct_num_workers`` and
``direct_running_mode`` -- what Beam's own ``DirectRunner`` falls back to after trying its Prism
runner, which downloads a binary (impossible offline). ``BundleBasedDirectRunner`` is Beam's older
in-process runner: one worker, but it retries a failed bundle (up to 4 attempts), as
Dataflow, Flink and Spark do and the FnApiRunner does not.

``DaskRunner`` is ``apache_beam.runners.dask.dask_runner.DaskRunner`` (``pip install
'memgraph-tf[beam]'`` brings ``dask[distributed]``), given the scheduler with
``--dask_client_address`` (``dask_address`` here, ``--dask-address`` on the command line; without
it, Beam starts a local cluster). That runner keeps no metrics, so :func:`classify_with_beam`
sums the :class:`~memgraph_tf.beam.transforms.PageTally` elements the job computed instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from memgraph_tf.batch.summary import RunSummary

logger = logging.getLogger(__name__)

RUNNERS = (
    "DirectRunner",
    "BundleBasedDirectRunner",
    "FlinkRunner",
    "SparkRunner",
    "DataflowRunner",
    "DaskRunner",
)
#: Runners whose workers run inside the launching process (``inprocess:``/``embedded:`` graphs).
IN_PROCESS_RUNNERS = ("DirectRunner", "BundleBasedDirectRunner")
RUNNING_MODES = ("in_memory", "multi_threading", "multi_processing")

BEAM_MISSING = (
    "Apache Beam is not installed: pip install 'memgraph-tf[beam]' (the extra pins a "
    "Beam release that installs beside this TensorFlow)"
)
DASK_MISSING = (
    "DaskRunner: dask.distributed is not installed: pip install 'memgraph-tf[beam]' (the extra "
    "includes dask[distributed])"
)


def require_beam() -> Any:
    """The ``apache_beam`` module; raises ImportError with the install command when it is
    missing."""
    try:
        import apache_beam
    except ImportError as exc:
        raise ImportError(BEAM_MISSING) from exc
    return apache_beam


def _check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    from memgraph_tf.errors import ConfigurationError

    if value not in choices:
        raise ConfigurationError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def running_mode_for(graph: Any, num_workers: int, running_mode: str | None) -> str:
    """``running_mode`` when given; else ``multi_threading`` for an in-process graph (the workers
    must share the launcher's graph), ``multi_processing`` for a Bolt graph with more than one
    worker (Python threads share one core for Python code), ``in_memory`` for one worker."""
    if running_mode is not None:
        return _check_choice("running_mode", running_mode, RUNNING_MODES)
    if graph.in_process:
        return "multi_threading"
    return "multi_processing" if num_workers > 1 else "in_memory"


def pipeline_options(
    runner: str = "DirectRunner",
    *,
    num_workers: int = 1,
    running_mode: str = "in_memory",
    pipeline_args: Sequence[str] = (),
) -> Any:
    """``PipelineOptions`` for ``runner``: ``pipeline_args`` (Beam's own flags, e.g.
    ``--flink_master=host:8081``, ``--project=...``, ``--dask_client_address=HOST:8786``), plus
    ``direct_num_workers`` and ``direct_running_mode`` for the DirectRunner. ``save_main_session``
    stays off: the transforms import what they use."""
    require_beam()
    from apache_beam.options.pipeline_options import PipelineOptions

    _check_choice("runner", runner, RUNNERS)
    extra: dict[str, Any] = {}
    if runner == "DirectRunner":
        extra = {"direct_num_workers": num_workers, "direct_running_mode": running_mode}
    elif runner == "DaskRunner":
        _dask_runner_class()  # registers DaskOptions (--dask_client_address, ...) with Beam
    elif runner != "BundleBasedDirectRunner":
        extra = {"runner": runner}
    return PipelineOptions(list(pipeline_args), **extra)


def _dask_runner_class() -> Any:
    """Beam's DaskRunner class; raises ImportError naming the extra when dask.distributed is
    missing (Beam imports its Dask runner module without it, then fails when a job starts)."""
    require_beam()
    try:
        import dask.distributed  # noqa: F401 -- only to see whether it is installed
        from apache_beam.runners.dask.dask_runner import DaskRunner
    except ImportError as exc:
        raise ImportError(DASK_MISSING) from exc
    return DaskRunner


def create_runner(runner: str, options: Any) -> Any:
    """The runner object for ``runner``: the FnApiRunner for ``DirectRunner`` (with the pipeline
    options handed to its workers, as Beam's DirectRunner does, but never Prism),
    ``BundleBasedDirectRunner``, Beam's ``DaskRunner`` (which Beam does not find by that name), or
    None for the others (Beam resolves ``--runner`` itself)."""
    require_beam()
    _check_choice("runner", runner, RUNNERS)
    if runner == "DaskRunner":
        return _dask_runner_class()()
    if runner == "DirectRunner":
        from apache_beam.portability.api import beam_provision_api_pb2
        from apache_beam.runners.portability.fn_api_runner import fn_runner
        from apache_beam.runners.portability.portable_runner import JobServiceHandle

        encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
        return fn_runner.FnApiRunner(
            provision_info=fn_runner.ExtendedProvisionInfo(
                beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
            )
        )
    if runner == "BundleBasedDirectRunner":
        from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner

        return BundleBasedDirectRunner()
    return None


def create_pipeline(
    runner: str = "DirectRunner",
    *,
    num_workers: int = 1,
    running_mode: str = "in_memory",
    pipeline_args: Sequence[str] = (),
) -> Any:
    """A ``beam.Pipeline`` on ``runner`` (see :func:`pipeline_options`, :func:`create_runner`)."""
    beam = require_beam()
    options = pipeline_options(
        runner, num_workers=num_workers, running_mode=running_mode, pipeline_args=pipeline_args
    )
    return beam.Pipeline(runner=create_runner(runner, options), options=options)


@dataclasses.dataclass
class BeamSummary(RunSummary):
    """What a pipeline run did (:class:`~memgraph_tf.batch.summary.RunSummary`: the model, the
    property written, ``elapsed_s`` -- the whole run, start-up of workers and model included --
    and :attr:`nodes_per_s` of the written nodes), from its committed counters: ``selected``
    nodes the run set out to read (counted with the key span), ``read`` node keys read,
    ``fetched`` blobs sampled, ``classified`` predictions made, ``written`` nodes written,
    ``unchanged`` predictions the write left alone (the node already carried this version: a
    retried bundle), ``invalid`` nodes skipped (``skip_invalid``). :func:`check_read_all` checks
    that ``read`` adds up to ``selected``."""

    runner: str
    workers: int
    selected: int = 0
    read: int = 0
    fetched: int = 0
    written: int = 0
    unchanged: int = 0
    invalid: int = 0
    #: the model embedded (``P`` the embedding, ``P_version``) rather than classified
    embedded: bool = False

    rate_of: ClassVar[str] = "written"

    def counts_text(self) -> str:
        return (
            f"{'embedded' if self.embedded else 'classified'} {self.classified} nodes, written "
            f"{self.written}, unchanged {self.unchanged}, skipped {self.invalid} invalid on "
            f"{self.runner} ({self.workers} worker(s))"
        )

    def text(self) -> str:
        if not self.embedded:
            return super().text()
        return (
            f"{self.counts_text()} in {self.elapsed_s:.1f} s: {self.nodes_per_s:.0f} nodes/s; "
            f"model {self.model_name} version {self.model_version} -> {self.write_property}, "
            f"{self.write_property}_version"
        )


def _counters(result: Any) -> dict[str, int]:
    from apache_beam.metrics.metric import MetricsFilter

    from memgraph_tf.beam.transforms import NAMESPACE

    totals: dict[str, int] = {}
    for counter in result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + int(value or 0)
    return totals


def run_pipeline(pipeline: Any, collect: Callable[[Any], Any] | None = None) -> Any:
    """Runs ``pipeline`` and waits for it; raises what the job raised, or RuntimeError when it
    ended in another state than DONE. Returns ``collect(result)`` (default: the result). On Beam's
    DaskRunner, which opens a Dask client per job and never closes it, the client is closed here
    after ``collect`` ran (``collect`` may gather the job's last elements from it:
    ``result.client.gather(result.futures)``)."""
    from memgraph_tf.beam.transforms import runs_on_dask

    result = pipeline.run()
    client = getattr(result, "client", None) if runs_on_dask(pipeline) else None
    try:
        result.wait_until_finish()
        state = str(getattr(result, "state", "DONE"))
        if not state.endswith("DONE"):
            raise RuntimeError(f"the pipeline ended in state {state}")
        return collect(result) if collect is not None else result
    finally:
        if client is not None:
            client.close()


def _dask_counts(result: Any, transform: Any) -> tuple[dict[str, int], int]:
    """The counter totals of a DaskRunner job of ClassifyNodes -- summed from the
    :class:`~memgraph_tf.beam.transforms.PageTally` elements it computed (the runner's own
    ``metrics()`` raises NotImplementedError), ``nodes_selected`` from the launcher's key plan --
    and the number of workers the scheduler has."""
    tallies = [tally for part in result.client.gather(result.futures) for tally in part]
    counts = {"nodes_selected": transform.plan.selected if transform.plan else 0}
    for name, field in (
        ("nodes_read", "read"),
        ("nodes_fetched", "fetched"),
        ("nodes_classified", "classified"),
        ("nodes_written", "written"),
        ("nodes_unchanged", "unchanged"),
    ):
        counts[name] = sum(getattr(t, field) for t in tallies)
    counts["nodes_invalid"] = sum(len(t.invalid) for t in tallies)
    return counts, len(result.client.nthreads())


def check_runner_for_graph(graph: Any, runner: str, running_mode: str | None) -> None:
    """Raises ConfigurationError when ``graph`` lives in this process (``embedded:``,
    ``inprocess:``) but the runner's workers would not (another runner, or ``multi_processing``):
    their writes would go to copies that nobody reads."""
    from memgraph_tf.errors import ConfigurationError

    if graph.in_process and (
        runner not in IN_PROCESS_RUNNERS or running_mode == "multi_processing"
    ):
        raise ConfigurationError(
            f"graph: {graph.uri} lives in this process, but {runner} in {running_mode} mode runs "
            "workers "
            f"elsewhere (their writes would be lost); use a Bolt graph, or the DirectRunner with "
            f"running mode in_memory or multi_threading"
        )


def classify_with_beam(
    graph: Any,
    model: Any,
    *,
    runner: str = "DirectRunner",
    num_workers: int = 1,
    running_mode: str | None = None,
    pipeline_args: Sequence[str] = (),
    dask_address: str | None = None,
    **classify_options: Any,
) -> BeamSummary:
    """Runs :class:`~memgraph_tf.beam.transforms.ClassifyNodes` (``classify_options``: label,
    where, where_params, write_property, batch_size, num_ranges, skip_invalid, overwrite,
    read_graph) over
    ``graph`` (a :class:`~memgraph_tf.beam.graph_specs.GraphSpec`) with ``model`` (a resolved
    :class:`~memgraph_tf.beam.models.ModelSpec`) on ``runner`` and waits for it to finish.

    ``dask_address`` (only with ``runner="DaskRunner"``): the Dask scheduler, ``HOST:PORT`` or
    ``tcp://HOST:PORT`` (Beam's ``--dask_client_address``); its workers log in to a Bolt graph
    with their own ``MEMGRAPH_TF_USER`` / ``_PASSWORD``, and this process reads the key span with
    its own (see ClassifyNodes).

    Guarantees: the graph ends with the same predictions as ``memgraph-tf classify`` would write
    (see ClassifyNodes); raises when the pipeline fails (what was written stays: rerun to resume);
    the summary's counts are the runner's committed counters (on the DaskRunner, which keeps
    none: the sum of the pages' tallies the job computed, and ``workers`` is the number of Dask
    workers)."""
    require_beam()
    from memgraph_tf.beam.graph_specs import acquire, release
    from memgraph_tf.beam.transforms import ClassifyNodes
    from memgraph_tf.errors import ConfigurationError

    if runner == "DaskRunner" and num_workers != 1:
        raise ConfigurationError(
            f"num_workers: not with the DaskRunner, got {num_workers} (the Dask cluster's workers "
            "run the job: start them with `dask worker`)"
        )
    if dask_address is not None:
        if runner != "DaskRunner":
            raise ConfigurationError(f"dask_address: only with the DaskRunner, not {runner}")
        pipeline_args = [*pipeline_args, f"--dask_client_address={dask_address}"]
    if runner == "DaskRunner" and not any(
        a.startswith(("--dask_npartitions", "--dask_partition_size")) for a in pipeline_args
    ):  # the job's Creates hold one key range each: exact, and no warning per range
        pipeline_args = [*pipeline_args, "--dask_npartitions=1"]

    mode = running_mode_for(graph, num_workers, running_mode) if runner == "DirectRunner" else None
    check_runner_for_graph(graph, runner, mode)
    if classify_options.get("read_graph") is not None:
        check_runner_for_graph(classify_options["read_graph"], runner, mode)
    transform = ClassifyNodes(graph, model, **classify_options)
    held = acquire(graph) if graph.in_process else None  # one copy, shared with the worker threads
    t0 = time.perf_counter()
    try:
        pipeline = create_pipeline(
            runner,
            num_workers=num_workers,
            running_mode=mode or "in_memory",
            pipeline_args=pipeline_args,
        )
        _ = pipeline | "ClassifyNodes" >> transform
        logger.info(
            "running ClassifyNodes for %s on %s (%d worker(s), %s)",
            model,
            runner,
            num_workers,
            mode,
        )
        if runner == "DaskRunner":
            counts, num_workers = run_pipeline(pipeline, lambda r: _dask_counts(r, transform))
        else:
            counts = run_pipeline(pipeline, _counters)
    finally:
        if held is not None:
            release(held)
    summary = BeamSummary(
        model.model_name,
        model.version,
        transform.selection.write_property,
        runner,
        num_workers,
        selected=counts.get("nodes_selected", 0),
        read=counts.get("nodes_read", 0),
        fetched=counts.get("nodes_fetched", 0),
        classified=counts.get("nodes_classified", 0),
        written=counts.get("nodes_written", 0),
        unchanged=counts.get("nodes_unchanged", 0),
        invalid=counts.get("nodes_invalid", 0),
        embedded=getattr(model, "embed", None) is not None,
        elapsed_s=time.perf_counter() - t0,
    )
    logger.info("%s", summary.text())
    check_read_all(summary, transform)
    return summary


def check_read_all(summary: BeamSummary, transform: Any) -> None:
    """Raises :class:`~memgraph_tf.errors.KeysetPagingError` naming the gap when the key
    ranges read fewer nodes than the run selected (``summary.read < summary.selected``: a server
    whose keyset pages stopped early or skipped keys), unless the nodes left unread are no longer
    to do (classified by another run or deleted meanwhile: counted again on the read graph; with
    ``overwrite``, the selected nodes now)."""
    from memgraph_tf.beam.graph_specs import acquire, release
    from memgraph_tf.errors import KeysetPagingError

    missing = summary.selected - summary.read
    if missing <= 0:
        return
    scan = transform.scan
    handle = acquire(scan.graph)
    try:
        table = handle.table(scan.selection)
        still = table.count(True) if scan.todo else table.count(False) - summary.read
    finally:
        release(handle)
    missing = min(missing, still)
    if missing <= 0:
        logger.info(
            "%d selected node(s) not read are no longer to do", summary.selected - summary.read
        )
        return
    raise KeysetPagingError(
        f"selected {summary.selected} node(s) but read {summary.read} (classified "
        f"{summary.classified}, {summary.invalid} invalid): {missing} node(s) were never read "
        f"(the server's keyset pages over the key ranges stopped early or skipped keys)"
    )


# ---------------------------------------------------------------------------------- command line
def add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--runner``, ``--dask-address``, ``--num-workers``, ``--running-mode``,
    ``--id-ranges``, ``--read-graph``
    and the trailing Beam pipeline options (everything after ``--``) to the ``classify`` or
    ``embed`` parser. Without ``--runner`` nothing changes (``args.runner`` is None); with it,
    call :func:`run_classify_pipeline`. Needs no Beam to add the arguments."""
    group = parser.add_argument_group(
        "Apache Beam (pip install 'memgraph-tf[beam]'; see docs/scaling.md)"
    )
    group.add_argument(
        "--runner",
        choices=RUNNERS,
        default=None,
        help="run as an Apache Beam pipeline on this runner; Beam pipeline options go "
        "after --, e.g. -- --flink_master=HOST:8081 --environment_type=LOOPBACK",
    )
    group.add_argument(
        "--dask-address",
        default=None,
        metavar="HOST:PORT",
        help="DaskRunner: the dask.distributed scheduler (Beam's --dask_client_address; "
        "without it Beam starts a local cluster); its workers need MEMGRAPH_TF_USER / "
        "MEMGRAPH_TF_PASSWORD in their environment",
    )
    group.add_argument(
        "--num-workers",
        type=int,
        default=1,
        help="DirectRunner: worker threads or processes (direct_num_workers; default 1)",
    )
    group.add_argument(
        "--running-mode",
        choices=RUNNING_MODES,
        default=None,
        help="DirectRunner: how workers run (default: multi_threading for an embedded "
        "graph, multi_processing for a Bolt graph with several workers)",
    )
    group.add_argument(
        "--id-ranges",
        type=int,
        default=None,
        help="node-key ranges read in parallel (default 16, at least 4 per worker)",
    )
    group.add_argument(
        "--read-graph",
        default=None,
        metavar="URI",
        help="read node ids and sample neighbourhoods here (a Memgraph replica); "
        "predictions are written to --graph (MAIN)",
    )
    group.add_argument(
        "pipeline_args",
        nargs="*",
        default=[],
        metavar="-- BEAM_OPTION",
        help="Beam pipeline options (after --)",
    )


def parse_params(items: Sequence[str] | None) -> dict[str, Any]:
    """``NAME=VALUE`` items -> ``{NAME: value}``; VALUE is JSON when it parses as JSON, else a
    string (the rule of ``memgraph-tf classify --param``). Raises ValueError for an item without
    ``=``."""
    params: dict[str, Any] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--param: expected NAME=VALUE, got {item!r}")
        try:
            params[name] = json.loads(text)
        except ValueError:
            params[name] = text
    return params


def _worker_error(exc: BaseException) -> str:
    """The last ``SomethingError: message`` line of a worker's traceback text (runners hand worker
    errors back as text), else the exception itself."""
    text = str(exc)
    lines = [
        m.group(0) for m in re.finditer(r"(?m)^(?:[\w.]+\.)?(\w*(?:Error|Exception)): .*$", text)
    ]
    if lines:
        return re.sub(r"^(?:[\w.]+\.)?(\w+: )", r"\1", lines[-1]).strip()[:1000]
    return f"{type(exc).__name__}: {' '.join(text.split())[:1000]}"


def pipeline_model(args: argparse.Namespace, command: str = "classify") -> Any:
    """The :class:`~memgraph_tf.beam.models.ModelSpec` a command line names: ``classify``'s
    ``--model`` or ``--serving`` / ``--serving-grpc`` (with ``--model-name`` /
    ``--model-version``); ``embed``'s ``--model`` with ``--role`` (default: a node bundle's
    encoder, a link bundle's source encoder). Raises
    :class:`~memgraph_tf.errors.ConfigurationError` for a bad combination."""
    from memgraph_tf.beam.models import ModelSpec
    from memgraph_tf.errors import ConfigurationError

    if command == "embed":
        for name in ("create_index", "index_name"):
            if getattr(args, name, None):
                flag = "--" + name.replace("_", "-")
                raise ConfigurationError(
                    f"{flag}: not with --runner (run `memgraph-tf embed --create-index` "
                    f"without --runner once the pipeline has written the embeddings)"
                )
        role = getattr(args, "role", None)
        if role is None:
            role = "node" if ModelSpec.resolve(bundle=args.model).config.link is None else "source"
        return ModelSpec.resolve(bundle=args.model, embed=role)
    if args.model is not None:
        if args.model_name or args.model_version is not None:
            raise ConfigurationError(
                "--model-name / --model-version: only with --serving or --serving-grpc"
            )
        return ModelSpec.resolve(bundle=args.model)
    return ModelSpec.resolve(
        rest=args.serving,
        grpc=args.serving_grpc,
        model_name=args.model_name,
        version=args.model_version,
    )


def run_classify_pipeline(
    args: argparse.Namespace, *, out: Any = None, err: Any = None, command: str = "classify"
) -> int:
    """``memgraph-tf classify ... --runner R [-- BEAM OPTIONS]`` (or ``memgraph-tf embed ...
    --runner R``): batch inference as a Beam pipeline with the command's options (``--graph``,
    the model of :func:`pipeline_model`, ``--label``, ``--where`` / ``--param`` (classify),
    ``--write-property``, ``--batch-size``, ``--skip-invalid``, ``--overwrite``) plus
    :func:`add_runner_arguments`'s. Beam pipeline options without ``--runner`` are a usage
    error. Prints the summary line; returns the exit code of the one
    table (:func:`memgraph_tf.errors.exit_code_for`): 0 done, 1 the pipeline failed (what was
    written stays; rerun to resume), 2 a bad command line or setting, or Beam missing (nothing
    was run), 130 interrupted. Errors are one line on stderr, never a traceback."""
    out = out or sys.stdout
    err = err or sys.stderr

    def fail(code: int, message: str) -> int:
        print(f"memgraph-tf {command}: {message}", file=err)
        return code

    from memgraph_tf.errors import EXIT_INTERRUPTED, EXIT_USAGE, MemgraphTfError, exit_code_for

    if not args.runner:
        return fail(
            EXIT_USAGE,
            f"error: unexpected arguments {args.pipeline_args} (Beam pipeline options after -- "
            f"need --runner)",
        )

    try:
        require_beam()
    except ImportError as exc:
        return fail(exit_code_for(exc), f"error: {exc}")
    from memgraph_tf.beam.graph_specs import GraphSpec
    from memgraph_tf.beam.transforms import DEFAULT_NUM_RANGES
    from memgraph_tf.errors import ConfigurationError

    try:
        if getattr(args, "shard", "0/1") not in (None, "0/1"):
            raise ConfigurationError(
                "--shard: not with --runner (the pipeline splits the node keys itself)"
            )
        if getattr(args, "fetch_workers", 1) not in (None, 1):
            raise ConfigurationError("--fetch-workers: not with --runner (use --num-workers)")
        if args.runner == "DaskRunner" and args.num_workers != 1:
            raise ConfigurationError(
                "--num-workers: not with --runner DaskRunner (the Dask cluster's workers run the "
                "job: start them with `dask worker`)"
            )
        if args.num_workers < 1:
            raise ConfigurationError(
                f"--num-workers: expected an integer >= 1, got {args.num_workers}"
            )
        id_ranges = (
            args.id_ranges
            if args.id_ranges is not None
            else max(DEFAULT_NUM_RANGES, 4 * args.num_workers)
        )
        params = parse_params(getattr(args, "param", None))
        if params and getattr(args, "where", None) is None:
            raise ConfigurationError("--param: only with --where")
        graph = GraphSpec(args.graph)
        read_graph = GraphSpec(args.read_graph) if getattr(args, "read_graph", None) else None
        if getattr(args, "where", None) is not None and graph.in_process:
            raise ConfigurationError(
                "where: the embedded graph runs no Cypher; --where needs a Bolt graph "
                "(--graph bolt://...)"
            )
        mode = running_mode_for(graph, args.num_workers, args.running_mode)
        check_runner_for_graph(graph, args.runner, mode if args.runner == "DirectRunner" else None)
        model = pipeline_model(args, command)
        summary = classify_with_beam(
            graph,
            model,
            runner=args.runner,
            num_workers=args.num_workers,
            running_mode=args.running_mode,
            pipeline_args=list(args.pipeline_args or []),
            dask_address=getattr(args, "dask_address", None),
            label=args.label,
            where=getattr(args, "where", None),
            where_params=params,
            write_property=args.write_property,
            batch_size=args.batch_size,
            num_ranges=id_ranges,
            skip_invalid=args.skip_invalid,
            overwrite=args.overwrite,
            read_graph=read_graph,
        )
    except (Exception, KeyboardInterrupt) as exc:  # one line and the table's exit code
        code = exit_code_for(exc)
        if code == EXIT_INTERRUPTED:
            return fail(
                code, "interrupted; what was written stays: run the same command again to resume"
            )
        if code == EXIT_USAGE:
            return fail(code, f"error: {exc}")
        if isinstance(exc, (MemgraphTfError, OSError)):
            detail = str(exc)
        else:  # a worker's error comes back from the runner as text
            logger.debug("the pipeline failed", exc_info=True)
            detail = _worker_error(exc)
        return fail(
            code,
            f"failed: {detail} (what was written stays: run the same command again to resume)",
        )
    print(summary.text(), file=out)
    return 0


__all__ = [
    "BEAM_MISSING",
    "DASK_MISSING",
    "IN_PROCESS_RUNNERS",
    "RUNNERS",
    "RUNNING_MODES",
    "BeamSummary",
    "add_runner_arguments",
    "check_read_all",
    "check_runner_for_graph",
    "classify_with_beam",
    "create_pipeline",
    "create_runner",
    "parse_params",
    "pipeline_model",
    "pipeline_options",
    "require_beam",
    "run_classify_pipeline",
    "run_pipeline",
    "running_mode_for",
]
