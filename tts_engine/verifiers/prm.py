"""Process scoring behind one interface: `score_steps(problem, steps) -> per-step scores in [0, 1]`.

Discriminative process reward models (PRMs), each read in its own format: one small `PRMFormat` subclass
  per format says how a (problem, steps) pair becomes token ids, where each step's score is read and how a
  forward pass becomes a probability there. Registered formats:
  `qwen_prm` (Qwen2.5-Math-PRM: chat template, steps joined by `<extra_0>`, token classification, P(label 1)),
  `math_shepherd` (causal LM, " ки" after each step, P("+") over {"+", "-"} at the tag),
  `rlhflow` (causal LM chat: each step a user turn, the assistant answers "+"; P("+") over {"+", "-"}),
  `skywork` (causal LM body + value head `v_head.summary`, sigmoid of the value at each step's end token).
  A new format is one class with `@register_prm_format`; `detect_prm_format` reads a checkpoint's config.
The project's own verifiers serve the same interface through their `step_scorer` (each in its verifier's module).

Every scorer also answers `score_batch(problems, steps_lists) -> [StepScores]` (one batched call; what step-level
search uses), and counts the tokens it read or wrote (its compute).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, ClassVar, Sequence

from .base import BatchedScorer, StepScores, check_steps

log = logging.getLogger(__name__)


# --- discriminative PRMs -----------------------------------------------------------------------------------
PRM_FORMATS: dict[str, type["PRMFormat"]] = {}


def register_prm_format(cls: type["PRMFormat"]) -> type["PRMFormat"]:
    """Class decorator: make a PRMFormat selectable by its `name` (`--prm-format NAME`) and by detection."""
    if not getattr(cls, "name", None):
        raise ValueError(f"{cls.__name__} needs a class attribute `name`")
    PRM_FORMATS[cls.name] = cls
    return cls


class PRMFormat(BatchedScorer):
    """A discriminative PRM: encode (problem, steps) to ids + step positions; a forward pass gives probabilities.

    Subclasses set `name`, implement `encode` and `step_probs`, and may override `load_model` (how the
    checkpoint is loaded) and `matches` (detection from the checkpoint's config.json and tokenizer).
    """

    name: ClassVar[str] = ""

    def __init__(self, model, tokenizer, *, device: str | None = None, max_batch: int = 16):
        import torch

        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_batch = max_batch
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_id = pad if pad is not None else 0
        self.setup()

    # --- what a format defines -------------------------------------------------------------------------
    def setup(self) -> None:
        """Look up the format's special token ids (called once, after the tokenizer is set)."""

    def encode(self, problem: str, steps: Sequence[str]) -> tuple[list[int], list[int]]:
        """Token ids of the scored sequence and the position whose output holds each step's score."""
        raise NotImplementedError

    def step_probs(self, ids, mask):
        """P(step correct) at every position `# (B, T)` of right-padded ids `# (B, T)`."""
        raise NotImplementedError

    @classmethod
    def load_model(cls, path: str, dtype):
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(path, dtype=dtype)

    @classmethod
    def matches(cls, config: dict[str, Any], tokenizer) -> bool:
        """Whether a checkpoint with this config.json (and tokenizer) is in this format."""
        return False

    # --- shared machinery ------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls, path: str | Path, *, device: str | None = None, dtype: str | None = None, max_batch: int = 16
    ) -> "PRMFormat":
        import torch
        from transformers import AutoTokenizer

        path = str(path)
        if not Path(path).is_dir():
            raise FileNotFoundError(f"PRM checkpoint {path!r} does not exist (pass a local Hugging Face checkpoint)")
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = cls.load_model(path, getattr(torch, dtype) if dtype else torch.float32)
        return cls(model, tokenizer, device=device, max_batch=max_batch)

    def token_id(self, text: str, what: str) -> int:
        """The id of the last token of `text` (how these PRMs name their tag tokens), checked to exist."""
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if not ids:
            raise ValueError(f"the {self.name} PRM's tokenizer has no token for {what} {text!r}")
        return ids[-1]

    def score_batch(self, problems: Sequence[str], steps: Sequence[Sequence[str]]) -> list[StepScores]:
        import torch

        encoded = []
        for problem, row in zip(problems, steps, strict=True):
            check_steps(row)
            ids, positions = self.encode(problem, row)
            if len(positions) != len(row):
                raise ValueError(
                    f"{self.name} PRM: found {len(positions)} step positions for {len(row)} steps "
                    "(a step text contains the format's separator?)"
                )
            encoded.append((ids, positions))
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
        result: list[StepScores | None] = [None] * len(encoded)
        with torch.inference_mode():
            for start in range(0, len(order), self.max_batch):
                part = order[start : start + self.max_batch]
                ids, mask = _right_pad([encoded[i][0] for i in part], self.pad_id)  # (B, T)
                probs = self.step_probs(ids.to(self.device), mask.to(self.device)).float().cpu()  # (B, T)
                for row, i in enumerate(part):
                    seq, positions = encoded[i]
                    result[i] = StepScores([float(probs[row, p]) for p in positions], len(seq))
        return result  # type: ignore[return-value]


def _right_pad(sequences: list[list[int]], pad_id: int):
    """Right-padded ids and mask `# (B, T)`: positions stay those of the unpadded sequence."""
    import torch

    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    return ids, mask


def _pair_prob(logits, good: int, bad: int):
    """P(good) over {good, bad} from logits `# (B, T, V)` -> `# (B, T)`."""
    return logits[..., [good, bad]].float().softmax(-1)[..., 0]


def _architectures(config: dict[str, Any]) -> str:
    return " ".join(config.get("architectures") or [])


def _has_token(tokenizer, token: str) -> bool:
    return token in tokenizer.get_vocab()


@register_prm_format
class QwenPRM(PRMFormat):
    """Qwen2.5-Math-PRM: system/user/assistant chat, steps joined and ended by `<extra_0>`; a token
    classification head with 2 labels; the step score is softmax(logits)[1] at each `<extra_0>`."""

    name = "qwen_prm"
    separator = "<extra_0>"
    system_prompt = "Please reason step by step, and put your final answer within \\boxed{}."

    def setup(self) -> None:
        if not _has_token(self.tokenizer, self.separator):
            raise ValueError(f"the qwen_prm format needs the token {self.separator!r} in the PRM's tokenizer")
        self.sep_id = self.tokenizer.convert_tokens_to_ids(self.separator)

    def encode(self, problem, steps):
        messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": problem},
            {"role": "assistant", "content": self.separator.join(steps) + self.separator},
        ]
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return ids, [i for i, t in enumerate(ids) if t == self.sep_id]

    def step_probs(self, ids, mask):
        out = self.model(input_ids=ids, attention_mask=mask)
        logits = out.logits if hasattr(out, "logits") else out[0]  # (B, T, 2)
        return logits.float().softmax(-1)[..., 1]

    @classmethod
    def load_model(cls, path, dtype):
        from transformers import AutoConfig, AutoModel, AutoModelForTokenClassification

        config = AutoConfig.from_pretrained(path, trust_remote_code=True)
        if getattr(config, "auto_map", None):  # the released checkpoint ships its own modeling code
            return AutoModel.from_pretrained(path, dtype=dtype, trust_remote_code=True)
        return AutoModelForTokenClassification.from_pretrained(path, dtype=dtype)

    @classmethod
    def matches(cls, config, tokenizer):
        arch = _architectures(config)
        return "ProcessRewardModel" in arch or "ForTokenClassification" in arch


@register_prm_format
class MathShepherdPRM(PRMFormat):
    """Math-Shepherd: "{problem} {step 1} ки\\n{step 2} ки..." to a causal LM; the step score is P("+") over
    {"+", "-"} of the next token at each "ки" tag."""

    name = "math_shepherd"
    tag = "ки"

    def setup(self) -> None:
        self.tag_id = self.token_id(self.tag, "the step tag")
        self.good, self.bad = self.token_id("+", "the good mark"), self.token_id("-", "the bad mark")

    def encode(self, problem, steps):
        text = problem + " " + "".join(f"{step} {self.tag}\n" for step in steps)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return ids, [i for i, t in enumerate(ids) if t == self.tag_id]

    def step_probs(self, ids, mask):
        return _pair_prob(self.model(input_ids=ids, attention_mask=mask).logits, self.good, self.bad)

    @classmethod
    def matches(cls, config, tokenizer):
        return _has_token(tokenizer, cls.tag) and not getattr(tokenizer, "chat_template", None)


@register_prm_format
class RLHFlowPRM(PRMFormat):
    """RLHFlow's PRMs: a chat where each step is a user turn (the first prefixed by the problem) and the
    assistant answers "+"; the step score is P("+") over {"+", "-"} where the assistant's answer is predicted."""

    name = "rlhflow"

    def setup(self) -> None:
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError("the rlhflow format needs a tokenizer with a chat template")
        self.good, self.bad = self.token_id("+", "the good mark"), self.token_id("-", "the bad mark")

    def encode(self, problem, steps):
        conversation, positions = [], []
        for k, step in enumerate(steps):
            conversation.append({"role": "user", "content": f"{problem} {step}" if k == 0 else step})
            asked = self.tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
            positions.append(len(self.tokenizer.encode(asked, add_special_tokens=False)) - 1)
            conversation.append({"role": "assistant", "content": "+"})
        text = self.tokenizer.apply_chat_template(conversation, tokenize=False)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if any(p + 1 >= len(ids) or ids[p + 1] != self.good for p in positions):
            raise ValueError(
                "rlhflow PRM: the chat template does not put the assistant's '+' right after the "
                "generation prompt; this tokenizer is not in the rlhflow format"
            )
        return ids, positions

    def step_probs(self, ids, mask):
        return _pair_prob(self.model(input_ids=ids, attention_mask=mask).logits, self.good, self.bad)

    @classmethod
    def matches(cls, config, tokenizer):
        arch = _architectures(config)
        return "ForCausalLM" in arch and bool(getattr(tokenizer, "chat_template", None))


class ValueHeadModel:
    """A causal LM body with Skywork's value head (`v_head.summary`: Linear(hidden, 1)) on its last hidden state."""

    def __init__(self, body, head):
        self.body, self.head = body, head

    def to(self, device):
        self.body.to(device)
        self.head.to(device)
        return self

    def eval(self):
        self.body.eval()
        self.head.eval()
        return self

    def __call__(self, input_ids, attention_mask):
        hidden = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, D)
        return self.head(hidden.to(self.head.weight.dtype)).squeeze(-1)  # (B, T)


def _value_head_weights(path: str) -> dict[str, Any]:
    """The `v_head.*` tensors of a checkpoint's safetensors files."""
    from safetensors import safe_open

    found = {}
    for file in sorted(Path(path).glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as f:
            for key in f.keys():
                if key.startswith("v_head."):
                    found[key[len("v_head.") :]] = f.get_tensor(key)
    return found


@register_prm_format
class SkyworkPRM(PRMFormat):
    """Skywork-o1-Open-PRM: BOS + problem + "\\n", then each step followed by the step token "\\n"; the step
    score is sigmoid(value head) at each step token."""

    name = "skywork"
    step_token = "\n"

    def setup(self) -> None:
        self.step_id = self.token_id(self.step_token, "the step token")

    def encode(self, problem, steps):
        bos = self.tokenizer.bos_token or ""
        ids = self.tokenizer.encode(bos + problem + "\n", add_special_tokens=False)
        positions = []
        for step in steps:
            ids += self.tokenizer.encode(step, add_special_tokens=False) + [self.step_id]
            positions.append(len(ids) - 1)
        return ids, positions

    def step_probs(self, ids, mask):
        return self.model(input_ids=ids, attention_mask=mask).float().sigmoid()

    @classmethod
    def load_model(cls, path, dtype):
        import torch
        from transformers import AutoModel

        head_weights = _value_head_weights(path)
        if "summary.weight" not in head_weights:
            raise ValueError(
                f"{path}: no value head (v_head.summary.weight) in the safetensors files; the skywork format needs one"
            )
        body = AutoModel.from_pretrained(path, dtype=dtype)
        weight = head_weights["summary.weight"]
        head = torch.nn.Linear(weight.shape[1], 1, bias="summary.bias" in head_weights)
        head.load_state_dict({k[len("summary.") :]: v for k, v in head_weights.items() if k.startswith("summary.")})
        return ValueHeadModel(body, head.to(dtype))

    @classmethod
    def matches(cls, config, tokenizer):
        return "prmmodel" in _architectures(config).lower()


def detect_prm_format(path: str | Path, tokenizer=None) -> str:
    """The format of a PRM checkpoint: `prm_format` in its config.json, else the first format (in
    `detection_order()`) whose `matches` accepts its config and tokenizer."""
    from transformers import AutoTokenizer

    config_file = Path(path) / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{path}: no config.json (pass a local Hugging Face PRM checkpoint)")
    config = json.loads(config_file.read_text())
    if config.get("prm_format"):
        return check_prm_format(config["prm_format"])
    tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(path))
    for name in detection_order():
        if PRM_FORMATS[name].matches(config, tokenizer):
            return name
    raise ValueError(
        f"{path}: cannot tell the PRM format from its config (architectures "
        f"{config.get('architectures')}); pass prm_format (--prm-format) as one of {sorted(PRM_FORMATS)}"
    )


DETECTION_FIRST = ("qwen_prm", "skywork", "math_shepherd", "rlhflow")
"""Built-in formats in the order detection tries them (a value-head model is a causal LM too, so skywork comes
before rlhflow); formats registered later are tried after these."""


def detection_order() -> list[str]:
    return [n for n in DETECTION_FIRST if n in PRM_FORMATS] + [n for n in PRM_FORMATS if n not in DETECTION_FIRST]


def check_prm_format(name: str) -> str:
    if name not in PRM_FORMATS:
        raise ValueError(f"prm_format must be one of {sorted(PRM_FORMATS)}, got {name!r}")
    return name


def load_prm(
    path: str | Path,
    prm_format: str | None = None,
    *,
    device: str | None = None,
    dtype: str | None = None,
    max_batch: int = 16,
) -> PRMFormat:
    """A PRM checkpoint served in its format (`prm_format`, else detected from the checkpoint)."""
    name = check_prm_format(prm_format) if prm_format else detect_prm_format(path)
    return PRM_FORMATS[name].from_pretrained(path, device=device, dtype=dtype, max_batch=max_batch)
