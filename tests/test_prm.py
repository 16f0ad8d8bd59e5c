"""Each PRM format against a tiny random model of its architecture and head, built in code (no downloads).

Every test builds the exact sequence the format should score by hand, runs one unpadded forward pass, reads the
probability at the step positions itself, and compares with the scorer's batched, padded output.
"""

from __future__ import annotations

import json

import pytest
import torch

from tts_engine.inputs.tiny import TinyModelConfig, build_char_tokenizer, build_tiny_model
from tts_engine.verifiers.prm import (
    PRM_FORMATS,
    MathShepherdPRM,
    PRMFormat,
    QwenPRM,
    RLHFlowPRM,
    SkyworkPRM,
    StepScores,
    ValueHeadModel,
    detect_prm_format,
    load_prm,
    register_prm_format,
)

CHAT = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SMALL = TinyModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=512)
PROBLEM = "Compute left to right: 3+4*2."
STEPS = ["3+4=7", "7*2=14", "\\boxed{14}"]
OTHER = ("What is 1+1?", ["1+1=2"])


def tokenizer(extra=(), chat=False):
    tok = build_char_tokenizer()
    if extra:
        tok.add_tokens(list(extra))
    if chat:
        tok.chat_template = CHAT
    return tok


def qwen2_config(tok, **kw):
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=len(tok),
        hidden_size=SMALL.hidden_size,
        intermediate_size=SMALL.intermediate_size,
        num_hidden_layers=SMALL.num_layers,
        num_attention_heads=SMALL.num_heads,
        num_key_value_heads=SMALL.num_heads,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        **kw,
    )


def ids_of(tok, text):
    return tok.encode(text, add_special_tokens=False)


def check_batch(scorer: PRMFormat, expected_ids: list[int], direct: list[float]):
    """Positions found by the scorer, and its batched scores equal the direct ones (padded beside a shorter item)."""
    ids, positions = scorer.encode(PROBLEM, STEPS)
    assert ids == expected_ids
    assert len(positions) == len(STEPS)
    got = scorer.score_batch([OTHER[0], PROBLEM], [OTHER[1], STEPS])
    assert isinstance(got[1], StepScores) and got[1].tokens == len(expected_ids)
    assert got[1].scores == pytest.approx(direct, abs=1e-5)
    assert scorer.score_steps(PROBLEM, STEPS) == pytest.approx(direct, abs=1e-5)
    assert all(0.0 <= s <= 1.0 for s in got[0].scores) and len(got[0].scores) == 1
    return positions


def test_qwen_prm_reads_label_1_at_every_extra_0():
    from transformers import Qwen2ForTokenClassification

    tok = tokenizer(["<extra_0>"], chat=True)
    torch.manual_seed(0)
    model = Qwen2ForTokenClassification(qwen2_config(tok, num_labels=2)).eval()
    scorer = QwenPRM(model, tok, device="cpu")
    text = (
        f"<|im_start|>system\n{QwenPRM.system_prompt}<|im_end|>\n<|im_start|>user\n{PROBLEM}<|im_end|>\n"
        "<|im_start|>assistant\n3+4=7<extra_0>7*2=14<extra_0>\\boxed{14}<extra_0><|im_end|>\n"
    )
    expected = ids_of(tok, text)
    sep = tok.convert_tokens_to_ids("<extra_0>")
    with torch.no_grad():
        probs = model(torch.tensor([expected])).logits[0].softmax(-1)[:, 1]
    marks = [i for i, t in enumerate(expected) if t == sep]
    positions = check_batch(scorer, expected, [float(probs[i]) for i in marks])
    assert positions == marks and len(marks) == 3


def test_math_shepherd_reads_plus_over_minus_at_each_tag():
    tok = tokenizer(["ки"])
    model = build_tiny_model(tok, SMALL).eval()
    scorer = MathShepherdPRM(model, tok, device="cpu")
    expected = ids_of(tok, f"{PROBLEM} 3+4=7 ки\n7*2=14 ки\n\\boxed{{14}} ки\n")
    tag, plus, minus = (tok.convert_tokens_to_ids(t) for t in ("ки", "+", "-"))
    with torch.no_grad():
        logits = model(torch.tensor([expected])).logits[0]
    tags = [i for i, t in enumerate(expected) if t == tag]
    direct = [float(logits[i, [plus, minus]].softmax(-1)[0]) for i in tags]
    assert check_batch(scorer, expected, direct) == tags


def test_rlhflow_reads_the_position_that_predicts_each_assistant_plus():
    tok = tokenizer(chat=True)
    model = build_tiny_model(tok, SMALL).eval()
    scorer = RLHFlowPRM(model, tok, device="cpu")
    turns = [f"{PROBLEM} 3+4=7", "7*2=14", "\\boxed{14}"]
    text = "".join(f"<|im_start|>user\n{t}<|im_end|>\n<|im_start|>assistant\n+<|im_end|>\n" for t in turns)
    expected = ids_of(tok, text)
    plus, minus = tok.convert_tokens_to_ids("+"), tok.convert_tokens_to_ids("-")
    # the "+" answering each turn: the token after each "<|im_start|>assistant\n"
    head = ids_of(tok, "<|im_start|>assistant\n")
    answers = [i + len(head) for i in range(len(expected)) if expected[i : i + len(head)] == head]
    assert all(expected[a] == plus for a in answers)
    with torch.no_grad():
        logits = model(torch.tensor([expected])).logits[0]
    direct = [float(logits[a - 1, [plus, minus]].softmax(-1)[0]) for a in answers]
    assert check_batch(scorer, expected, direct) == [a - 1 for a in answers]


def skywork_model(tok):
    torch.manual_seed(1)
    body = build_tiny_model(tok, SMALL)
    head = torch.nn.Linear(SMALL.hidden_size, 1)
    return body, head


def test_skywork_reads_sigmoid_of_the_value_at_each_step_token():
    tok = tokenizer()
    body, head = skywork_model(tok)
    scorer = SkyworkPRM(ValueHeadModel(body.model, head), tok, device="cpu")
    expected = ids_of(tok, PROBLEM + "\n") + sum((ids_of(tok, s) + ids_of(tok, "\n") for s in STEPS), [])
    newline = ids_of(tok, "\n")[0]
    with torch.no_grad():
        values = head(body.model(torch.tensor([expected])).last_hidden_state)[0, :, 0].sigmoid()
    ends = [i for i, t in enumerate(expected) if t == newline][1:]  # the first newline ends the problem
    assert check_batch(scorer, expected, [float(values[i]) for i in ends]) == ends


def save(tmp_path, name, model, tok, architectures=None, extra_state=None):
    path = tmp_path / name
    model.save_pretrained(path)
    tok.save_pretrained(path)
    if architectures:
        config = json.loads((path / "config.json").read_text())
        config["architectures"] = architectures
        (path / "config.json").write_text(json.dumps(config))
    if extra_state:
        from safetensors.torch import load_file, save_file

        state = load_file(str(path / "model.safetensors"))
        state.update(extra_state)
        save_file(state, str(path / "model.safetensors"), metadata={"format": "pt"})
    return path


def test_formats_are_detected_from_the_checkpoint_and_load(tmp_path):
    from transformers import Qwen2ForTokenClassification

    qtok = tokenizer(["<extra_0>"], chat=True)
    qwen = save(tmp_path, "qwen", Qwen2ForTokenClassification(qwen2_config(qtok, num_labels=2)), qtok)
    stok = tokenizer(["ки"])
    shepherd = save(tmp_path, "shepherd", build_tiny_model(stok, SMALL), stok)
    rtok = tokenizer(chat=True)
    rlhflow = save(tmp_path, "rlhflow", build_tiny_model(rtok, SMALL), rtok)
    ktok = tokenizer()
    body, head = skywork_model(ktok)
    sky = save(
        tmp_path,
        "skywork",
        body,
        ktok,
        ["Qwen2ForPrmModel"],
        {"v_head.summary.weight": head.weight.detach().clone(), "v_head.summary.bias": head.bias.detach().clone()},
    )
    for path, name in ((qwen, "qwen_prm"), (shepherd, "math_shepherd"), (rlhflow, "rlhflow"), (sky, "skywork")):
        assert detect_prm_format(path) == name
        prm = load_prm(path, device="cpu")
        assert prm.name == name
        scores = prm.score_steps(PROBLEM, STEPS)
        assert len(scores) == 3 and all(0 <= s <= 1 for s in scores)
    direct = SkyworkPRM(ValueHeadModel(body.model, head), ktok, device="cpu").score_steps(PROBLEM, STEPS)
    assert load_prm(sky, device="cpu").score_steps(PROBLEM, STEPS) == pytest.approx(direct, abs=1e-5)


def test_bad_input_gets_a_clear_error(tmp_path):
    tok = tokenizer()
    plain = save(tmp_path, "plain", build_tiny_model(tok, SMALL), tok)
    with pytest.raises(ValueError, match="cannot tell the PRM format.*--prm-format"):
        detect_prm_format(plain)
    with pytest.raises(ValueError, match="prm_format must be one of"):
        load_prm(plain, "nope")
    with pytest.raises(ValueError, match="needs the token '<extra_0>'"):
        load_prm(plain, "qwen_prm", device="cpu")
    with pytest.raises(ValueError, match="no value head"):
        load_prm(plain, "skywork", device="cpu")
    scorer = MathShepherdPRM(build_tiny_model(tokenizer(["ки"]), SMALL), tokenizer(["ки"]), device="cpu")
    with pytest.raises(ValueError, match="at least one step"):
        scorer.score_steps(PROBLEM, [])
    with pytest.raises(ValueError, match="4 step positions for 3 steps"):
        scorer.score_steps(PROBLEM, ["a ки", "b", "c"])


def test_a_new_format_is_one_small_class(tmp_path):
    @register_prm_format
    class LastTokenPRM(PRMFormat):
        """Scores each step by P("Y") over {"Y", "N"} after "<step> ?"."""

        name = "test_last_token"

        def setup(self):
            self.yes, self.no = self.token_id("Y", "yes"), self.token_id("N", "no")

        def encode(self, problem, steps):
            ids, positions = self.tokenizer.encode(problem, add_special_tokens=False), []
            for step in steps:
                ids += self.tokenizer.encode(f"\n{step} ?", add_special_tokens=False)
                positions.append(len(ids) - 1)
            return ids, positions

        def step_probs(self, ids, mask):
            logits = self.model(input_ids=ids, attention_mask=mask).logits
            return logits[..., [self.yes, self.no]].softmax(-1)[..., 0]

        @classmethod
        def matches(cls, config, tokenizer):
            return config.get("model_type") == "qwen2" and config.get("hidden_size") == 32

    try:
        tok = tokenizer()
        path = save(tmp_path, "custom", build_tiny_model(tok, SMALL), tok)
        assert detect_prm_format(path) == "test_last_token"
        assert len(load_prm(path, device="cpu").score_steps(PROBLEM, STEPS)) == 3
    finally:
        PRM_FORMATS.pop("test_last_token")
