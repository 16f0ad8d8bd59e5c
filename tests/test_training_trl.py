"""RL^V on TRL (training/trl.py) and the reward functions for TRL and verl, on a tiny Qwen2 built in code (CPU)."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

pytest.importorskip("trl", reason="TRL is not installed (pip install 'tts-engine[trl]')")

from datasets import Dataset  # noqa: E402

from tts_engine.inputs.prompts import PromptConfig  # noqa: E402
from tts_engine.inputs.tiny import TinyModelConfig, build_char_tokenizer, build_tiny_model  # noqa: E402
from tts_engine.training import batching, rl  # noqa: E402
from tts_engine.training.reward_functions import answer_reward, async_answer_reward, openai_judge  # noqa: E402
from tts_engine.training.trl import RLVGRPOConfig, RLVGRPOTrainer, rlv_dataset_rows  # noqa: E402
from tts_engine.training.verl_reward import compute_score, verl_rows  # noqa: E402

G = 4
PROMPT_CONFIG = PromptConfig(template="{problem}\n", use_chat_template=False)
PROBLEMS = [{"problem": "Compute 1+2.", "answer": "3"}, {"problem": "Compute 4*2.", "answer": "8"}]


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)
    tokenizer = build_char_tokenizer()
    model = build_tiny_model(
        tokenizer, TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, seed=3)
    )
    return model, tokenizer


def half_boxed_reward(prompts=None, completions=None, **_):
    """A reward that splits random completions into both classes: 1 when the text has an even length."""
    return [float(len(c) % 2 == 0) for c in completions]


def make_trainer(tiny, tmp_path, verify_weight=1.0, problems=PROBLEMS, cls=RLVGRPOTrainer, **overrides):
    model, tokenizer = tiny
    settings = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=G * len(problems),
        num_generations=G,
        max_completion_length=12,
        max_steps=2,
        learning_rate=1e-3,
        logging_steps=1,
        bf16=False,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        seed=7,
        temperature=1.0,
        dataloader_num_workers=0,
        disable_tqdm=True,
        loss_type="grpo",
    )
    settings.update(overrides)
    data = Dataset.from_list(rlv_dataset_rows(problems, tokenizer, PROMPT_CONFIG))
    if cls is RLVGRPOTrainer:
        args = RLVGRPOConfig(verify_weight=verify_weight, **settings)
        return cls(
            model=copy.deepcopy(model),
            reward_funcs=half_boxed_reward,
            args=args,
            train_dataset=data,
            processing_class=tokenizer,
            prompt_config=PROMPT_CONFIG,
        )
    from trl import GRPOConfig

    return cls(
        model=copy.deepcopy(model),
        reward_funcs=half_boxed_reward,
        args=GRPOConfig(**settings),
        train_dataset=data,
        processing_class=tokenizer,
    )


def one_batch(trainer):
    """One generation batch of the trainer, as its _prepare_inputs would make it (train mode)."""
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop; one batch = one optimizer step
    rows = [dict(r) for r in trainer.train_dataset for _ in range(G)]
    return trainer._generate_and_score_completions(rows)


def test_two_steps_train_with_the_verification_term(tiny, tmp_path):
    trainer = make_trainer(tiny, tmp_path)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "verify/loss" in h]
    assert len(logs) == 2
    assert all(h["verify/loss"] > 0 for h in logs)
    assert all(0.0 <= h["verify/balanced_accuracy"] <= 1.0 for h in logs)
    trainer.save_model()
    assert PromptConfig.load(tmp_path) == PROMPT_CONFIG  # `tts solve --model` scores with the trained prompts


def test_gradient_of_the_verification_term_reaches_the_yes_no_logits(tiny, tmp_path):
    trainer = make_trainer(tiny, tmp_path)
    batch = one_batch(trainer)
    assert {"verify_ids", "verify_target", "verify_weight"} <= set(batch)
    assert set(batch["verify_label"].tolist()) == {0, 1}  # both classes, so the weights are balanced
    assert batch["verify_weight"].sum().item() == pytest.approx(1.0)
    model = trainer.model
    head = model.get_output_embeddings().weight

    def grads(weight):
        trainer.args.verify_weight = weight
        model.zero_grad()
        trainer.compute_loss(model, batch).backward()
        return head.grad.clone()

    with_v, without_v = grads(1.0), grads(0.0)
    model.zero_grad()
    v_loss, _ = trainer.verification_loss(model, batch)
    v_loss.backward()
    alone = head.grad.clone()
    rows = [trainer.yes_id, trainer.no_id]
    assert alone[rows].abs().sum() > 0
    torch.testing.assert_close(with_v - without_v, alone, atol=1e-6, rtol=1e-4)


def test_lambda_zero_is_trls_own_grpo(tiny, tmp_path):
    from trl import GRPOTrainer

    ours = make_trainer(tiny, tmp_path / "a", verify_weight=0.0)
    ours.train()
    theirs = make_trainer(tiny, tmp_path / "b", cls=GRPOTrainer)  # seeds the RNGs again, as ours did
    theirs.train()
    loss_a = [h["loss"] for h in ours.state.log_history if "loss" in h]
    loss_b = [h["loss"] for h in theirs.state.log_history if "loss" in h]
    assert loss_a == loss_b and len(loss_a) == 2
    assert not any("verify/loss" in h for h in ours.state.log_history)
    for p, q in zip(ours.model.parameters(), theirs.model.parameters()):
        torch.testing.assert_close(p, q, atol=0, rtol=0)


def test_losses_equal_the_cpu_trainers_on_one_batch(tiny, tmp_path):
    """Same rollouts, same advantages: TRL's policy loss and our verification loss equal training/rl.py's."""
    problems = [PROBLEMS[0]]  # one prompt: no left padding, so positions match the CPU trainer's right padding
    trainer = make_trainer(tiny, tmp_path, problems=problems, per_device_train_batch_size=G)
    batch = one_batch(trainer)
    model, tokenizer = trainer.model, trainer.processing_class
    prompt = rlv_dataset_rows(problems, tokenizer, PROMPT_CONFIG)[0]["prompt"]
    mask = batch["completion_mask"].bool()
    completion_ids = [row[m].tolist() for row, m in zip(batch["completion_ids"], mask)]
    texts = tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
    prompt_ids = [tokenizer.encode(prompt, add_special_tokens=False)] * G
    assert prompt_ids[0] == batch["prompt_ids"][0].tolist()

    # policy loss: sampling log-probs off the current policy by up to 0.3 nats, so ratios are clipped on both sides
    with torch.no_grad():
        now = batching.completion_logprobs(
            model, *batching.pad_pairs(prompt_ids, completion_ids, tokenizer.pad_token_id)[:2]
        )
    generator = torch.Generator().manual_seed(0)
    old_lists = [
        (now[b, len(p) : len(p) + len(c)] + 0.6 * torch.rand(len(c), generator=generator) - 0.3).tolist()
        for b, (p, c) in enumerate(zip(prompt_ids, completion_ids))
    ]
    batch["old_per_token_logps"] = torch.zeros_like(batch["completion_mask"], dtype=torch.float32)
    for b, lps in enumerate(old_lists):
        batch["old_per_token_logps"][b, : len(lps)] = torch.tensor(lps)
    trainer.args.verify_weight = 0.0
    trl_policy = trainer.compute_loss(model, batch)
    cpu_policy = rl.policy_loss(
        model, prompt_ids, completion_ids, old_lists, batch["advantages"], trainer.epsilon_low, tokenizer.pad_token_id
    )
    assert abs(cpu_policy.item()) > 1e-3  # off-policy: not the trivial on-policy value -mean(advantages) = 0
    torch.testing.assert_close(trl_policy, cpu_policy, atol=1e-6, rtol=1e-5)
    grads = [torch.autograd.grad(loss, list(model.parameters())) for loss in (trl_policy, cpu_policy)]
    for g_trl, g_cpu in zip(*grads):
        torch.testing.assert_close(g_trl, g_cpu, atol=1e-6, rtol=1e-4)

    # verification loss: the CPU trainer's examples (prompts, labels, class-balanced weights) and loss
    rewards = [[float(len(t) % 2 == 0) for t in texts]]
    examples = rl.verification_examples(PROMPT_CONFIG, [problems[0]["problem"]], [prompt], [texts], rewards)
    cpu_v, cpu_scores = rl.verification_loss(model, tokenizer, examples, trainer.yes_id, trainer.no_id)
    trl_v, trl_scores = trainer.verification_loss(model, batch)
    assert [e.label for e in examples] == batch["verify_label"].tolist()
    torch.testing.assert_close(batch["verify_weight"], torch.tensor([e.weight for e in examples]))
    torch.testing.assert_close(trl_v, cpu_v, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(trl_scores, cpu_scores, atol=1e-6, rtol=1e-5)

    # and the total: TRL's loss + lambda x verification loss
    trainer.args.verify_weight = 0.5
    torch.testing.assert_close(trainer.compute_loss(model, batch), cpu_policy + 0.5 * cpu_v, atol=1e-5, rtol=1e-5)


# --- rewards --------------------------------------------------------------------------------------------------
SOLUTIONS = ["1+2=3\n\\boxed{3}", "\\boxed{4}", "no answer here", "so \\boxed{\\frac{1}{2}}", "\\boxed{one half}"]
REFERENCES = ["3", "3", "3", "0.5", "1/2"]


def test_rule_reward_on_hand_made_cases():
    reward = answer_reward("rule")
    assert reward(prompts=[""] * 5, completions=SOLUTIONS, answer=REFERENCES) == [1.0, 0.0, 0.0, 1.0, 0.0]
    conversational = [[{"role": "assistant", "content": s}] for s in SOLUTIONS[:2]]
    assert reward(prompts=None, completions=conversational, answer=REFERENCES[:2]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="'answer' column"):
        reward(prompts=[""], completions=["\\boxed{3}"], solution=["3"])
    with pytest.raises(ValueError, match="mode must be one of"):
        answer_reward("vote")


def test_async_reward_matches_sync():
    reward = async_answer_reward("rule")
    assert asyncio.run(reward(prompts=[""] * 5, completions=SOLUTIONS, answer=REFERENCES)) == answer_reward("rule")(
        prompts=[""] * 5, completions=SOLUTIONS, answer=REFERENCES
    )


def test_verl_compute_score_rule():
    assert compute_score("tts_engine", "so \\boxed{3}", "3") == 1.0
    assert compute_score("tts_engine", "so \\boxed{3}", 4, extra_info={"question": "q"}) == 0.0
    rows = verl_rows(PROBLEMS)
    assert rows[1]["reward_model"]["ground_truth"] == "8" and rows[1]["extra_info"]["question"] == "Compute 4*2."
    with pytest.raises(ValueError, match="needs judge_url"):
        compute_score("tts_engine", "\\boxed{3}", "3", mode="hybrid")


class FakeJudgeServer:
    """A TinyV-style judge on 127.0.0.1: replies True when the model answer is "one half" and the reference 1/2.

    It serves from its own thread until close() or `lifetime` seconds, whichever comes first.
    """

    def __init__(self, lifetime: float = 30.0):
        self.prompts: list[str] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.timeout = 0.1
        self.deadline = time.monotonic() + lifetime
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _serve(self) -> None:
        while not self.stopped.is_set() and time.monotonic() < self.deadline:
            self.httpd.handle_request()
        self.httpd.server_close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.prompts.append(body["prompt"])
                yes = (
                    "<model_answer>one half</model_answer>" in body["prompt"]
                    and "<ground_truth_answer>1/2</ground_truth_answer>" in body["prompt"]
                )
                data = json.dumps(
                    {
                        "choices": [
                            {"index": 0, "text": "True" if yes else "False", "token_ids": [1], "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 1},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def test_hybrid_reward_asks_the_judge_where_the_rule_says_wrong():
    server = FakeJudgeServer()
    try:
        judge = openai_judge(server.url, "judge", max_retries=0, timeout=10)
        reward = answer_reward("hybrid", judge)
        got = reward(prompts=[""] * 5, completions=SOLUTIONS, answer=REFERENCES, problem=["q"] * 5)
        assert got == [1.0, 0.0, 0.0, 1.0, 1.0]  # "one half" vs 1/2: a false negative the judge recovers
        asked = "\n".join(server.prompts)
        assert "<model_answer>one half</model_answer>" in asked  # words: the rule cannot say, the judge can
        assert "<model_answer>3</model_answer>" not in asked  # the rule accepted it: no judge call
        kwargs = dict(mode="hybrid", judge_url=server.url, judge_model="judge")
        assert compute_score("s", "\\boxed{one half}", "1/2", {"question": "q"}, **kwargs) == 1.0
        assert compute_score("s", "\\boxed{two}", "1/2", {"question": "q"}, **kwargs) == 0.0
    finally:
        server.close()


def test_command_line_trains_and_saves_what_tts_solve_serves(tmp_path):
    from tts_engine.inputs.tiny import save_tiny_checkpoint
    from tts_engine.training.trl import main

    model_dir = save_tiny_checkpoint(
        tmp_path / "model", TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    )
    PROMPT_CONFIG.save(model_dir)
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    out = tmp_path / "out"
    main(
        [
            "--model",
            str(model_dir),
            "--problems",
            str(problems),
            "--output_dir",
            str(out),
            "--max_steps",
            "1",
            "--num_generations",
            "2",
            "--per_device_train_batch_size",
            "4",
            "--max_completion_length",
            "8",
            "--use_cpu",
            "true",
            "--bf16",
            "false",
            "--report_to",
            "none",
            "--save_strategy",
            "no",
            "--verify_weight",
            "0.5",
            "--disable_tqdm",
            "true",
        ]
    )
    assert (out / "model.safetensors").is_file() and PromptConfig.load(out) == PROMPT_CONFIG
    with pytest.raises(SystemExit, match="needs --judge_url"):
        main(
            [
                "--model",
                str(model_dir),
                "--problems",
                str(problems),
                "--output_dir",
                str(out),
                "--reward",
                "hybrid",
                "--use_cpu",
                "true",
                "--bf16",
                "false",
            ]
        )


def test_the_engine_never_imports_trl_or_verl():
    import subprocess
    import sys

    code = (
        "import sys, tts_engine, tts_engine.cli.commands, tts_engine.engine, tts_engine.training.cli; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('trl', 'verl')); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-P", "-c", code], check=True, timeout=120)
