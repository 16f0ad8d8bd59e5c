"""`tts merge` and `tts launch`: data-parallel runs over several GPUs, processes or nodes."""

from __future__ import annotations

import click

from ..launch.shards import build_workers, gpu_groups, log_tail, merge_results, run_workers, shard_path
from ..settings import Command


def _problem_ids(problems: str, limit: int | None) -> list[str]:
    from ..inputs.problems import load_problems

    return [p.id for p in load_problems(_problems_path(problems), limit=limit)]


def _problems_path(problems: str) -> str:
    """A problems file, or `bundled` for the set shipped with the package."""
    if problems == "bundled":
        from ..inputs.models import default_problems_path

        return str(default_problems_path())
    return problems


def _limit_of(solve_args: tuple[str, ...]) -> int | None:
    """The --limit among pass-through solve options (the merge must expect the same problems)."""
    for i, arg in enumerate(solve_args):
        if arg == "--limit" and i + 1 < len(solve_args):
            return int(solve_args[i + 1])
        if arg.startswith("--limit="):
            return int(arg.split("=", 1)[1])
    return None


def _merge_and_report(shards, out, order) -> None:
    from ..running.results import read_results
    from ..running.summary import format_summary, summarize

    try:
        report = merge_results(shards, out, problem_order=order)
    except (KeyError, TypeError) as err:
        raise ValueError(f"not a results file of `tts solve`: a record lacks the field {err}") from None
    if report.written:
        try:
            click.echo(format_summary(summarize(list(read_results(out)))))
        except (KeyError, TypeError) as err:
            click.echo(f"(no summary: records lack the field {err})", err=True)
    click.echo(f"{out}: {report.describe()}", err=True)
    if not report.complete:
        raise click.ClickException(
            f"{len(report.missing)} problems have no results yet; rerun the missing "
            "shards (a rerun resumes) and merge again"
        )


@click.command(cls=Command)
@click.argument("shards", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Merged results JSONL.")
@click.option("--problems", help="Problems file (or `bundled`): merge in its order and report missing ids.")
@click.option("--limit", type=int, help="The --limit the shards were run with.")
def merge(shards, out, problems, limit):
    """Merge shard results files SHARDS into one results file (deduplicated by problem id)."""
    order = _problem_ids(problems, limit) if problems else None
    _merge_and_report(shards, out, order)


@click.command(cls=Command, context_settings={"ignore_unknown_options": True})
@click.argument("problems")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Merged results JSONL; shard I writes OUT.shardI.jsonl (and OUT.shardI.log) beside it.",
)
@click.option("--gpus", help="GPU ids, one worker per GPU (CUDA_VISIBLE_DEVICES), e.g. 0,1,2,3.")
@click.option(
    "--gpus-per-worker",
    type=int,
    default=1,
    show_default=True,
    help="GPUs given to each worker (for tensor-parallel models); with --ray, each actor's GPU request.",
)
@click.option(
    "--workers",
    type=int,
    help="Local CPU worker processes (instead of --gpus); with --ray, the number of actors (default: one per "
    "GPU group of the cluster, or per --cpus-per-worker CPUs).",
)
@click.option("--node-rank", type=int, default=0, show_default=True, help="This node's rank in a multi-node run.")
@click.option("--num-nodes", type=int, default=1, show_default=True, help="Nodes in the run (each runs launch).")
@click.option(
    "--ray",
    "ray_address",
    metavar="ADDRESS",
    help="Solve on a Ray cluster (pip install tts-engine[ray]): auto (the running one), local (start one here) or "
    "HOST:PORT; actors pull chunks of problems, this process writes OUT (docs/scale.md).",
)
@click.option("--cpus-per-worker", type=float, default=1, show_default=True, help="With --ray: each actor's CPUs.")
@click.option(
    "--chunk-size", type=int, help="With --ray: problems per chunk an actor pulls (default: about 2 per actor)."
)
@click.argument("solve_args", nargs=-1, type=click.UNPROCESSED)
def launch(
    problems,
    out,
    gpus,
    gpus_per_worker,
    workers,
    node_rank,
    num_nodes,
    ray_address,
    cpus_per_worker,
    chunk_size,
    solve_args,
):
    """Solve PROBLEMS (a file, or `bundled`) with one `tts solve` worker per GPU (or CPU worker), then merge.

    Options after PROBLEMS that launch does not know go to every `tts solve` worker (e.g. --n 64
    --backend vllm --model DIR). With --num-nodes > 1 each node writes its shard files and the merge is
    left to `tts merge` once every node is done. With --ray one results file is written by this process.
    """
    if ray_address is not None:
        if gpus or num_nodes > 1:
            raise click.ClickException("--ray places the workers itself: drop --gpus, --node-rank and --num-nodes")
        from ..launch.ray import RayConfig, launch_on_ray

        settings = RayConfig(ray_address, workers, gpus_per_worker, cpus_per_worker, chunk_size)
        launch_on_ray(
            parse_launch(_problems_path(problems), list(solve_args)),
            out,
            settings,
            lambda line: click.echo(line, err=True),
            click.echo,
        )
        return
    try:
        groups = gpu_groups(gpus, gpus_per_worker) if gpus else None
        plan = build_workers(
            _problems_path(problems),
            out,
            list(solve_args),
            gpu_groups=groups,
            workers=workers if groups is None else None,
            node_rank=node_rank,
            num_nodes=num_nodes,
        )
    except (ValueError, FileNotFoundError) as err:
        raise click.ClickException(str(err)) from err
    for w in plan:
        where = w.env.get("CUDA_VISIBLE_DEVICES")
        click.echo(f"shard {w.shard}: {'GPUs ' + where if where else 'CPU'} -> {w.out} (log {w.log})", err=True)
    codes = run_workers(plan)
    failed = [w for w, code in zip(plan, codes) if code != 0]
    for w in failed:
        click.echo(f"shard {w.shard} failed; end of {w.log}:\n{log_tail(w.log)}", err=True)
    if num_nodes > 1:
        total = len(plan) * num_nodes
        click.echo(
            f"node {node_rank} done; when every node is: tts merge "
            f"{' '.join(str(shard_path(out, i)) for i in range(total))} --out {out} --problems {problems}",
            err=True,
        )
    else:
        _merge_and_report([w.out for w in plan if w.out.is_file()], out, _problem_ids(problems, _limit_of(solve_args)))
    if failed:
        raise click.ClickException(f"{len(failed)} of {len(plan)} workers failed (rerun resumes where they stopped)")


def parse_launch(problems_path: str, solve_args: list[str]):
    """`tts launch --ray`'s PROBLEMS and solve options as a `Launch`, read by `tts solve`'s own command, so both accept
    the same options."""
    from ..inputs.problems import load_problems
    from ..launch.ray import Launch
    from .options import build_solve
    from .solve import solve

    for flag in ("--out", "--shard"):
        if any(a == flag or a.startswith(flag + "=") for a in solve_args):
            raise ValueError(f"{flag} is set by the Ray launch itself; remove it from the solve options")
    job, command, entry = build_solve(solve.make_context("tts launch", [problems_path, *solve_args]).params)
    problems = load_problems(problems_path, limit=command.limit)
    return Launch(job, problems, entry, command.retry_failed, command.all, command.quiet, command.overwrite)
