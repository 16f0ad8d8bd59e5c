"""The `tts` command."""

from __future__ import annotations

import importlib
import logging

import click

from .verifiers import SCORE_NORMS

LAZY_COMMANDS = {
    "train": ("tts_engine.training.cli", "train", "Train checkpoints: SFT, RL^V, Tango."),
    "curve": ("tts_engine.eval.cli", "curve", "Compute-vs-accuracy curves, efficiency ratio and plots from results."),
    "bench": ("tts_engine.eval.cli", "bench", "Generate and draw curves in one command."),
    "merge": ("tts_engine.cli_parallel", "merge", "Merge shard results files into one, in problem order."),
    "launch": ("tts_engine.cli_parallel", "launch", "Run one problem set over several GPUs or local workers."),
}


class LazyGroup(click.Group):
    """Subcommands living in other packages load only when called, so `tts solve` starts fast."""

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name in LAZY_COMMANDS:
            module, attr, _ = LAZY_COMMANDS[name]
            try:
                return getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as err:
                return _unavailable(name, err)
        return super().get_command(ctx, name)


def parse_backend_options(items: tuple[str, ...]) -> dict:
    """KEY=VALUE pairs; values read as int, float, true/false or text."""
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--backend-option")
        options[key.replace("-", "_")] = _parse_value(value)
    return options


def _parse_value(text: str):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _unavailable(name: str, err: Exception) -> click.Command:
    @click.command(name=name, help=f"{LAZY_COMMANDS[name][2]} (unavailable: {err})")
    def command():
        raise click.ClickException(f"`tts {name}` is not available in this installation: {err}")

    return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log progress details.")
def main(verbose: bool) -> None:
    """tts: test-time scaling for reasoning models.

    Sample N solutions per problem, score each with a verifier, aggregate by majority, verifier-weighted
    voting and best-of-N, and measure what each unit of compute bought.
    """
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s")
    if not verbose:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # weight-loading bars would drown the solve progress bar


@main.command()
@click.argument("problems", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--model", type=click.Path(), help="Hugging Face checkpoint (directory; or a name for vllm/openai). "
              "Default: the embedded tiny reasoner-verifier.")
@click.option("--backend", type=click.Choice(["hf", "vllm", "openai"]), default="hf", show_default=True,
              help="Generation backend.")
@click.option("--n", "n", type=int, default=16, show_default=True, help="Samples per problem.")
@click.option("--temperature", type=float, default=1.0, show_default=True)
@click.option("--top-p", type=float, default=1.0, show_default=True)
@click.option("--max-new-tokens", type=int, default=256, show_default=True, help="Token budget per sample.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--verifier", "--verifier-kind", "verifier", type=click.Choice(["unified", "process", "none"]),
              default="unified", show_default=True,
              help="unified: the model itself asked 'Is this solution correct?' (score P(Yes)); process: a "
              "generative verifier judging every step (needs --verifier-model); none: likelihood only.")
@click.option("--verifier-model", type=click.Path(), help="A separate verifier checkpoint (unified or process).")
@click.option("--process-aggregation", type=click.Choice(["final", "min", "prod", "mean", "last"]),
              default="final", show_default=True,
              help="process verifier: headline score from the final verdict or from step scores (all are recorded).")
@click.option("--score-norm", type=click.Choice(SCORE_NORMS), default="yes_no", show_default=True,
              help="Headline normalisation of P(Yes) (both are always recorded).")
@click.option("--grader", type=click.Choice(["rule", "hybrid", "judge"]), default="rule", show_default=True,
              help="How answers are graded against references (hybrid/judge need --judge-model).")
@click.option("--judge-model", type=click.Path(), help="LLM judge for --grader hybrid|judge.")
@click.option("--backend-option", "backend_option", multiple=True, metavar="KEY=VALUE",
              help="Backend setting, repeatable: e.g. dtype=bfloat16, max_batch_rows=64 (hf); "
              "tensor_parallel_size=2, gpu_memory_utilization=0.8, max_model_len=4096 (vllm); "
              "base_url=..., tokenizer=PATH, max_concurrency=32 (openai).")
@click.option("--limit", type=int, help="Only the first LIMIT problems.")
@click.option("--shard", help="Only shard I/K of the problems (0-based), for data-parallel runs.")
@click.option("--out", type=click.Path(dir_okay=False), help="Results JSONL, written as problems finish; "
              "rerunning with the same --out resumes.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--strategy", type=click.Choice(["fixed", "adaptive-length", "adaptive-n"]), default="fixed",
              show_default=True, help="fixed: N samples of --max-new-tokens each; adaptive-length: continue the "
              "cut samples of unconfident problems budget by budget; adaptive-n: sample in waves until confident.")
@click.option("--budgets", default="256,512,1024,2048", show_default=True,
              help="adaptive-length: increasing token budgets (replaces --max-new-tokens).")
@click.option("--tau", type=float, help="adaptive: confidence that stops a problem, in [0, 1] "
              "(default 0.6 for adaptive-length, 0.8 for adaptive-n).")
@click.option("--confidence-from", help="adaptive: strategy key whose vote confidence is compared with tau "
              "(default weighted:verifier_<score-norm> with a verifier, else majority).")
@click.option("--confidence-over", type=click.Choice(["answered", "all"]), default="answered", show_default=True,
              help="adaptive: confidence as a share of the samples with an answer, or of all samples (samples "
              "with no answer yet then count against stopping).")
@click.option("--wave", type=int, default=4, show_default=True, help="adaptive-n: samples per wave.")
@click.option("--min-n", type=int, default=4, show_default=True, help="adaptive-n: fewest samples before stopping.")
@click.option("--max-n", type=int, default=64, show_default=True, help="adaptive-n: most samples (replaces --n).")
def solve(problems, model, backend, n, temperature, top_p, max_new_tokens, seed, verifier, verifier_model,
          process_aggregation, score_norm, grader, judge_model, backend_option, limit, shard, out, quiet, strategy, budgets, tau, confidence_from,
          confidence_over, wave, min_n, max_n):
    """Solve PROBLEMS (JSONL/JSON; default: the bundled set) with N samples, verifier scores and voting."""
    from .engine import Engine
    from .models import default_problems_path
    from .problems import load_problems
    from .summary import format_summary, summarize

    problems_path = problems or default_problems_path()
    items = load_problems(problems_path, limit=limit)
    if shard:
        from .parallel import shard_problems

        items = shard_problems(items, shard)
    try:
        engine = Engine(model, backend=backend, verifier=verifier, verifier_model=verifier_model,
                        backend_options=parse_backend_options(backend_option),
                        process_aggregation=process_aggregation,
                        score_norm=score_norm, grader=grader, judge_model=judge_model)
    except (ValueError, FileNotFoundError, TypeError, ImportError) as err:
        raise click.ClickException(str(err)) from err
    click.echo(f"model: {engine.model_label} ({engine.backend.num_parameters:,} parameters, backend {backend})", err=True)
    click.echo(f"problems: {problems_path} ({len(items)}), n={n if strategy != 'adaptive-n' else max_n}", err=True)
    if strategy == "fixed":
        try:
            records = engine.solve(items, n=n, temperature=temperature, top_p=top_p,
                                   max_new_tokens=max_new_tokens, seed=seed, out=out, progress=not quiet)
        except ValueError as err:  # bad settings or a problem that cannot be served; finished lines are kept
            raise click.ClickException(str(err)) from err
    else:
        records = _solve_adaptive(engine, items, strategy, n=n, budgets=budgets, tau=tau,
                                  confidence_from=confidence_from, confidence_over=confidence_over, wave=wave,
                                  min_n=min_n, max_n=max_n, temperature=temperature, top_p=top_p,
                                  max_new_tokens=max_new_tokens, seed=seed, out=out, progress=not quiet)
    click.echo(format_summary(summarize(records)))
    if out:
        click.echo(f"results: {out}", err=True)


def _solve_adaptive(engine, items, strategy, *, n, budgets, tau, confidence_from, wave, min_n, max_n,
                    max_new_tokens, **common):
    """Run an adaptive strategy; bad settings become a clear command-line error before any generation."""
    from . import adaptive

    tau = (0.6 if strategy == "adaptive-length" else 0.8) if tau is None else tau
    try:
        adaptive.check_tau(tau)
        adaptive.confidence_key(engine, confidence_from)
        if strategy == "adaptive-length":
            budget_list = adaptive.parse_budgets(budgets)
        else:
            adaptive.check_waves(wave, min_n, max_n)
    except ValueError as err:
        raise click.ClickException(str(err)) from err
    if strategy == "adaptive-length":
        records = adaptive.solve_adaptive_length(engine, items, n=n, budgets=budget_list, tau=tau,
                                                 confidence_from=confidence_from, **common)
    else:
        records = adaptive.solve_adaptive_n(engine, items, wave=wave, min_n=min_n, max_n=max_n, tau=tau,
                                            confidence_from=confidence_from, max_new_tokens=max_new_tokens,
                                            **common)
    click.echo(adaptive.format_adaptive_summary(records))
    return records
