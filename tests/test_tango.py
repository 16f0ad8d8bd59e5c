"""Tango: schedule, alpha decay, step rewards on step-end tokens, advantage mixing, verifier rewards, a micro run."""

from __future__ import annotations

import json
import random

import pytest
import torch

from tts_engine.training.tango import rewards as tr
from tts_engine.verifiers.process import parse_verification
from tts_engine.verifiers.steps import step_end_tokens


def test_schedule_warmup_then_three_to_one():
    phases = [tr.phase(s, warmup_steps=2, ratio=3) for s in range(10)]
    assert phases == [
        "warmup",
        "warmup",
        "generator",
        "generator",
        "generator",
        "verifier",
        "generator",
        "generator",
        "generator",
        "verifier",
    ]
    assert tr.count_phases(10, 2, 3) == {"warmup": 2, "generator": 6, "verifier": 2}
    assert tr.count_phases(10, 2, 3, upto=5) == {"warmup": 2, "generator": 3, "verifier": 0}


def test_alpha_decays_exponentially_between_its_endpoints():
    alphas = [tr.alpha_at(g, 21, 0.1, 0.001) for g in range(21)]
    assert alphas[0] == pytest.approx(0.1) and alphas[-1] == pytest.approx(0.001)
    assert alphas[10] == pytest.approx(0.01)  # geometric midpoint
    assert all(a > b for a, b in zip(alphas, alphas[1:]))
    assert tr.alpha_at(5, 21, 0.0, 0.0) == 0.0


def test_step_rewards_land_on_step_end_tokens():
    solution = "1+2=3\n3*2=7\n\\boxed{7}"
    tokens = list(solution) + [""]  # one char per token, then the end-of-sequence token (decodes to "")
    parsed = parse_verification("1:+\n2:-\n3:-\nverdict:No", 3)
    rewards = tr.step_rewards(parsed)
    assert rewards == pytest.approx([1 / 3, -1 / 3, -1 / 3])
    ends = step_end_tokens(solution, tokens)
    placed = tr.token_rewards(rewards, ends, len(tokens))
    assert ends == [4, 10, 20]
    assert placed.nonzero().flatten().tolist() == [4, 10, 20]
    assert placed[[4, 10, 20]].tolist() == pytest.approx(rewards)


def test_no_step_rewards_without_one_verdict_per_step():
    parsed = parse_verification("1:+\nverdict:Yes", 3)
    assert tr.step_rewards(parsed) is None
    assert tr.token_rewards(None, [1, 2], 5).abs().sum() == 0


def test_process_advantage_is_group_normalised_reward_to_go():
    # rollout a: steps end at tokens 1 and 3 (rewards +1/2, -1/2); rollout b: one step at token 0 (+1); c: none
    adv = tr.process_advantages([[0.5, -0.5], [1.0], None], [[1, 3], [0], []], [5, 2, 3], "grpo")
    flat = torch.tensor([0.5, -0.5, 1.0])
    normed = ((flat - flat.mean()) / (flat.std() + 1e-6)).tolist()
    a, b, c = adv
    assert a.tolist() == pytest.approx([normed[0] + normed[1]] * 2 + [normed[1]] * 2 + [0.0])
    assert b.tolist() == pytest.approx([normed[2], 0.0])
    assert c.abs().sum() == 0
    rloo = tr.process_advantages([[0.5, -0.5], [1.0]], [[1, 3], [0]], [5, 2], "rloo")
    assert rloo[1][0].item() == pytest.approx(1.0 - 1.0 / 3)


def test_advantage_mixing_formula():
    process = torch.tensor([2.0, 1.0, 0.0])
    mixed = tr.mix_advantages(0.5, process, alpha=0.1)
    assert mixed.tolist() == pytest.approx([0.9 * 0.5 + 0.1 * 2, 0.9 * 0.5 + 0.1 * 1, 0.9 * 0.5])
    assert tr.mix_advantages(0.5, process, alpha=0.0).tolist() == pytest.approx([0.5] * 3)


def test_verifier_reward_and_class_weights():
    ok = parse_verification("1:+\n2:+\nverdict:Yes", 2)
    inconsistent = parse_verification("1:+\n2:-\nverdict:Yes", 2)
    garbage = parse_verification("??", 2)
    assert tr.verifier_rewards([ok, inconsistent, garbage, ok], [True, True, False, False], 0.2) == pytest.approx(
        [1.2, 1.0, 0.0, 0.2]
    )
    w = tr.class_weights([True, False, False, False])
    assert w == pytest.approx([0.5, 1 / 6, 1 / 6, 1 / 6])


def test_warm_start_targets_use_the_outcome_only():
    rng = random.Random(0)
    good = parse_verification(tr.warm_start_target(4, True, rng), 4)
    assert good.steps == [True] * 4 and good.final is True
    for _ in range(20):
        bad = parse_verification(tr.warm_start_target(4, False, rng), 4)
        assert bad.final is False and not all(bad.steps)
        cut = bad.first_error
        assert bad.steps == [k < cut for k in range(4)]  # "-" from the drawn step on


def micro_config(root, **settings):
    """A TangoConfig of a few tiny steps, from a fresh tiny init checkpoint written under `root`."""
    from tts_engine.inputs.tiny import TinyModelConfig
    from tts_engine.training import checkpoint as ckpt
    from tts_engine.training.tango import TangoConfig

    model, tok = ckpt.new_model(TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64))
    ckpt.save_model(root / "init", model, tok, ckpt.task_prompt_config())
    micro = dict(prompts_per_step=2, group_size=2, verifier_problems=2, verifier_rollouts=2, verifier_group=2)
    return TangoConfig(init_dir=str(root / "init"), out_dir=str(root / "run"), max_new_tokens=12, **micro, **settings)


@pytest.fixture(scope="module")
def micro_run(tmp_path_factory):
    from tts_engine.training.tango import train_tango

    root = tmp_path_factory.mktemp("tango")
    config = micro_config(root, warmup_steps=2, rl_steps=4, verifier_max_new_tokens=8, save_every=3)
    train_tango(config, progress=False, log=lambda _: None)
    return config, root


def test_micro_run_follows_the_schedule(micro_run):
    config, root = micro_run
    records = [json.loads(line) for line in (root / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["phase"] for r in records] == ["warmup", "warmup", "generator", "generator", "generator", "verifier"]
    alphas = [r["alpha"] for r in records if r["phase"] == "generator"]
    assert alphas == pytest.approx([0.1, 0.01, 0.001])
    assert (root / "run" / "verifier_warm" / "config.json").is_file()


def test_checkpoint_pair_round_trips_and_resumes(micro_run):
    from tts_engine.training import checkpoint as ckpt
    from tts_engine.training.tango import TangoConfig, TangoTrainer

    config, root = micro_run
    gen, _, _ = ckpt.load_model(root / "run" / "generator")
    ver, _, _ = ckpt.load_model(root / "run" / "verifier")
    warm, _, _ = ckpt.load_model(root / "run" / "verifier_warm")
    resumed = TangoTrainer(TangoConfig(**{**config.__dict__, "rl_steps": 8}))
    assert resumed.step_count == 6 and resumed.generator_done == 3
    assert_same_weights(gen, resumed.gen.model)  # the resumed trainer starts from the saved pair
    assert_same_weights(ver, resumed.ver.model)
    init, _, _ = ckpt.load_model(root / "init")
    assert changed_weights(init, warm)  # the warm-up trained the verifier
    # the saved pair is the trained one: a role's weights moved iff one of its RL steps made an update (an
    # untrained model's group of equal rewards has no advantage, so its steps may make none)
    records = [json.loads(line) for line in (root / "run" / "log.jsonl").read_text().splitlines()]
    gen_updated = any("pg_loss" in r for r in records if r["phase"] == "generator")
    ver_updated = any("verifier_pg_loss" in r for r in records if r["phase"] == "verifier")
    assert bool(changed_weights(init, gen)) == gen_updated
    assert bool(changed_weights(warm, ver)) == ver_updated
    assert tr.phase(resumed.step_count, config.warmup_steps, config.ratio) == "generator"


def assert_same_weights(a, b):
    """Every parameter of `a` equals its namesake in `b` (same names, shapes and values)."""
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and len(sa) > 0
    for name in sa:
        assert torch.equal(sa[name], sb[name]), name


def changed_weights(a, b) -> list[str]:
    """The names of the parameters that differ between two models of one architecture."""
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(sa[k].shape == sb[k].shape for k in sa)
    return [name for name in sa if not torch.equal(sa[name], sb[name])]


def test_balanced_pick_rebalances_rare_correct_solutions():
    rng = random.Random(0)
    rare = [False] * 30 + [True] * 2
    picked = tr.balanced_pick(rare, 8, rng)
    assert len(picked) == 8 and sum(rare[i] for i in picked) == 2  # every correct one, the rest incorrect
    even = [True] * 30 + [False] * 30
    assert sum(even[i] for i in tr.balanced_pick(even, 8, rng)) == 4
    assert tr.balanced_pick([False] * 3, 8, rng) == [0, 1, 2]


def test_a_role_forgets_cached_keys_and_values_when_its_weights_change(tmp_path):
    from tts_engine.params import SamplingParams
    from tts_engine.training.tango.trainer import Role

    config = micro_config(tmp_path)
    role = Role(tmp_path / "init", tmp_path / "role", lr=1e-3)
    role.backend.generate(["Compute left to right: 1+2."], SamplingParams(n=1, max_new_tokens=4, seed=0))
    assert role.backend.prefix_cache.tokens > 0  # the finished sequence was stored
    loss = role.model.lm_head.weight.square().mean()
    role.update(loss, config.lr)
    assert role.backend.prefix_cache.tokens == 0  # computed with the old weights: not reused
