import json

import torch

from tts_engine.prompts import PromptConfig, build_prompt
from tts_engine.tiny import TinyModelConfig
from tts_engine.training import checkpoint as ckpt
from tts_engine.training.sft import SFTConfig, sft_loss, train_sft
from tts_engine.tasks.arith.generator import ProblemStream

MICRO = TinyModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=256)


def test_sft_loss_decreases_on_a_fixed_batch():
    torch.manual_seed(0)
    model, tok = ckpt.new_model(MICRO)
    config = ckpt.task_prompt_config()
    batch = ProblemStream(0).batch(8)
    prompts, solutions = [build_prompt(config, p.problem) for p in batch], [p.solution for p in batch]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    first = sft_loss(model, tok, prompts, solutions).item()
    for _ in range(30):
        loss = sft_loss(model, tok, prompts, solutions)
        opt.zero_grad()
        loss.backward()
        opt.step()
    last = sft_loss(model, tok, prompts, solutions).item()
    assert last < 0.6 * first, (first, last)


def test_sft_loss_counts_only_the_solution():
    model, tok = ckpt.new_model(MICRO)
    a = sft_loss(model, tok, ["Compute left to right: 1+1.\n"], ["1+1=2\n\\boxed{2}"])
    b = sft_loss(model, tok, ["Compute left to right: 9+1.\n"], ["1+1=2\n\\boxed{2}"])
    assert not torch.isclose(a, b)  # the prompt conditions the solution ...
    model.zero_grad()
    # ... but changing only the last prompt token's target is not scored: the loss mask starts after the prompt
    ids = tok.encode("Compute left to right: 1+1.\n", add_special_tokens=False)
    assert len(ids) == len("Compute left to right: 1+1.\n")


def test_checkpoint_round_trip_and_resume(tmp_path):
    out = tmp_path / "sft"
    config = SFTConfig(out_dir=str(out), steps=2, batch_size=4, eval_every=100, model=MICRO, threads=1, dev_per_level=1)
    train_sft(config, progress=False, log=lambda _: None)
    model, tok, prompt_config = ckpt.load_model(out)
    assert prompt_config == ckpt.task_prompt_config()
    assert PromptConfig.load(out).template == "{problem}\n"
    ids = torch.tensor([tok.encode("Compute left to right: 3*4-2.\n12", add_special_tokens=False)])
    model2, _, _ = ckpt.load_model(out)
    assert torch.equal(model(input_ids=ids).logits, model2(input_ids=ids).logits)
    state = torch.load(out / ckpt.TRAINING_STATE, weights_only=False)
    state["extra"]["elapsed_s"] = 1000.0  # as if the first segment had run for 1000 s
    torch.save(state, out / ckpt.TRAINING_STATE)
    config.steps = 3
    train_sft(config, progress=False, log=lambda _: None)
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3]  # resumed at step 2, not restarted
    assert records[1]["elapsed_s"] < 1000 <= records[2]["elapsed_s"]  # the wall clock carries over the resume
    model3, _, _ = ckpt.load_model(out)
    assert not torch.equal(model(input_ids=ids).logits, model3(input_ids=ids).logits)
