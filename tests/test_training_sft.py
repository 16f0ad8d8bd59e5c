import json

import pytest
import torch

from tts_engine.inputs.prompts import PromptConfig, build_prompt
from tts_engine.inputs.tiny import TinyModelConfig
from tts_engine.tasks.arith.generator import ProblemStream
from tts_engine.training import checkpoint as ckpt
from tts_engine.training.sft import SFTConfig, sft_loss, train_sft

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
    torch.manual_seed(0)
    model, tok = ckpt.new_model(MICRO)
    prompts = ["Compute left to right: 1+1.\n", "Compute left to right: 12*3-4.\n"]  # rows of unequal length
    solutions = ["1+1=2\n\\boxed{2}", "12*3=36\n36-4=32\n\\boxed{32}"]
    got = sft_loss(model, tok, prompts, solutions)
    # the reference: each row alone (no padding), every token's log-probability, then the mean over the
    # solution's tokens and its end token only
    solution_logp, every_logp = [], []
    with torch.no_grad():
        for prompt, solution in zip(prompts, solutions):
            p = tok.encode(prompt, add_special_tokens=False)
            c = tok.encode(solution, add_special_tokens=False) + [tok.eos_token_id]
            ids = torch.tensor([p + c])
            logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)  # (T-1, V)
            token_logp = logp.gather(-1, ids[0, 1:, None]).squeeze(-1)  # (T-1,): log P(token t+1 | <= t)
            solution_logp.append(token_logp[len(p) - 1 :])  # the targets from the solution's first token on
            every_logp.append(token_logp)
    expected = -torch.cat(solution_logp).mean()
    assert len(torch.cat(solution_logp)) == sum(len(tok.encode(s, add_special_tokens=False)) + 1 for s in solutions)
    assert got.item() == pytest.approx(expected.item(), rel=1e-5)
    # the reference tells the two apart: counting the prompt's tokens too would give another value
    assert -torch.cat(every_logp).mean().item() != pytest.approx(expected.item(), rel=1e-3)
    # the prompt still conditions the solution: the same solution after another prompt costs another loss
    other = sft_loss(model, tok, ["Compute left to right: 9+1.\n"], solutions[:1])
    assert other.item() != pytest.approx(sft_loss(model, tok, prompts[:1], solutions[:1]).item(), rel=1e-6)


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


def test_levels_set_the_stream_and_the_dev_check(tmp_path):
    out = tmp_path / "sft"
    config = SFTConfig(
        out_dir=str(out), steps=1, batch_size=2, eval_every=1, model=MICRO, threads=1, dev_per_level=1, levels="2,7"
    )
    assert config.level_tuple == (2, 7)
    train_sft(config, progress=False, log=lambda _: None)
    record = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    assert set(record["dev_pass_at_1"]) == {"L2", "L7", "all"}
    with pytest.raises(ValueError, match="one weight per level"):
        SFTConfig(levels="1-8", level_weights=[1.0] * 5)
    with pytest.raises(ValueError, match="levels must"):
        SFTConfig(levels="0-3").level_tuple
