"""Process scoring behind one interface: `score_steps(problem, steps) -> per-step scores in [0, 1]`.

Two families serve it:
- discriminative process reward models (PRMs), each read in its own format: one small `PRMFormat` subclass
  per format says how a (problem, steps) pair becomes token ids, where each step's score is read and how a
  forward pass becomes a probability there. Registered formats:
  `qwen_prm` (Qwen2.5-Math-PRM: chat template, steps joined by `<extra_0>`, token classification, P(label 1)),
  `math_shepherd` (causal LM, " ки" after each step, P("+") over {"+", "-"} at the tag),
  `rlhflow` (causal LM chat: each step a user turn, the assistant answers "+"; P("+") over {"+", "-"}),
  `skywork` (causal LM body + value head `v_head.summary`, sigmoid of the value at each step's end token).
  A new format is one class with `@register_prm_format`; `detect_prm_format` reads a checkpoint's config.
- the project's own verifiers through adapters: `ProcessStepScorer` (the generative Tango-form verifier;
  its step verdicts), `UnifiedStepScorer` (the reasoner's Yes/No verdict on every step prefix), `CheckStepScorer`
  (a checking model's marks) and `PathStepScorer` (a re-solving model's belief in each step, read teacher-forced).

Every scorer also answers `score_batch(problems, steps_lists) -> [StepScores]` (one batched call; what step-level
search uses), and counts the tokens it read or wrote (its compute).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol, Sequence

log = logging.getLogger(__name__)


@dataclass
class StepScores:
    """What a step scorer says of one partial or complete solution."""

    scores: list[float]
    """P(step correct) for each step, in [0, 1], one per step given."""
    tokens: int = 0
    """Tokens the scorer read or wrote for this call (its compute)."""
    status: str = "ok"
    """"ok", or why some scores are a fallback (e.g. the process verifier's verdicts did not match the steps)."""


class StepScorer(Protocol):
    """score_steps(problem, steps) -> per-step scores; score_batch does many in one call."""

    name: str

    def score_steps(self, problem: str, steps: Sequence[str]) -> list[float]: ...

    def score_batch(self, problems: Sequence[str], steps: Sequence[Sequence[str]]) -> list[StepScores]: ...


class BatchedScorer:
    """`score_steps` from `score_batch`: subclasses implement the batched call only."""

    name = "scorer"

    def score_steps(self, problem: str, steps: Sequence[str]) -> list[float]:
        return self.score_batch([problem], [steps])[0].scores

    def score_batch(self, problems: Sequence[str], steps: Sequence[Sequence[str]]) -> list[StepScores]:
        raise NotImplementedError


def _check_steps(steps: Sequence[str]) -> None:
    if not steps:
        raise ValueError("steps must hold at least one step, got []")


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
            _check_steps(row)
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


# --- the project's verifiers through the same interface ----------------------------------------------------
class ProcessStepScorer(BatchedScorer):
    """The generative process verifier (Tango form) as a step scorer: its step verdicts on the solution so far.

    `prompt_for(problem)` is the generation prompt the verifier sees before the solution (the engine's).
    When its verdicts do not match the steps (or the prompt is too long), every step gets the final-verdict
    score and `status` says why.
    """

    name = "process"

    def __init__(self, verifier, prompt_for: Callable[[str], str], delimiter: str = "\n"):
        self.verifier, self.prompt_for, self.delimiter = verifier, prompt_for, delimiter
        params = getattr(verifier, "params", None)
        self.cache: dict[tuple[str, tuple[str, ...]], StepScores] | None = (
            {} if params is not None and params.greedy else None
        )
        """With a greedy verifier a (problem, steps) pair always gets the same verdicts: each is scored once
        (a search meets the same partial solution many times); a cached answer costs no tokens."""

    def score_batch(self, problems, steps):
        keys = [(problem, tuple(row)) for problem, row in zip(problems, steps)]
        for row in steps:
            _check_steps(row)
        known = self.cache if self.cache is not None else {}
        todo = list(dict.fromkeys(k for k in keys if k not in known)) if self.cache is not None else keys
        fresh = self._verify(todo)
        if self.cache is None:
            return fresh
        self.cache.update(zip(todo, fresh))
        uncharged, result = set(todo), []
        for key in keys:  # the tokens of a fresh verification are charged once, to its first asker
            scores = self.cache[key]
            result.append(scores if key in uncharged else StepScores(scores.scores, 0, scores.status))
            uncharged.discard(key)
        return result

    def _verify(self, keys: list[tuple[str, tuple[str, ...]]]) -> list[StepScores]:
        if not keys:
            return []
        problems = [p for p, _ in keys]
        scored = self.verifier.score(
            problems, [self.prompt_for(p) for p in problems], [[self.delimiter.join(row)] for _, row in keys]
        )
        return [self._step_scores(verdict, len(row)) for (_, row), (verdict,) in zip(keys, scored)]

    def _step_scores(self, verdict, num_steps: int) -> StepScores:
        """One verification's score per step; the final verdict's score for every step when they do not match."""
        step_scores = getattr(verdict, "step_scores", None)
        if step_scores is not None and len(step_scores) == num_steps:
            return StepScores(list(step_scores), verdict.tokens, verdict.status)
        final = verdict.scores.get("process_final", 0.0)
        status = verdict.status if verdict.status != "ok" else "step_count_mismatch"
        return StepScores([final] * num_steps, verdict.tokens, status)


class CheckStepScorer(ProcessStepScorer):
    """A model that checks its own solutions step by step (`verify_form: check`) as a step scorer.

    Its check of a partial solution marks every written step and then what is missing, so step k's score is
    the P(+) of the k-th mark it wrote; with fewer marks than steps, every step gets the verdict's score.
    """

    name = "check"

    def __init__(self, verifier, prompt_for: Callable[[str], str], delimiter: str = "\n"):
        super().__init__(verifier.checker, prompt_for, delimiter)

    def _step_scores(self, verdict, num_steps: int) -> StepScores:
        marks = verdict.mark_scores or []
        if len(marks) >= num_steps:
            return StepScores(list(marks[:num_steps]), verdict.tokens, "ok")
        return StepScores([verdict.scores.get("process_final", 0.0)] * num_steps, verdict.tokens, "too_few_marks")


class PrefixCachedScorer(BatchedScorer):
    """A step scorer whose step k is read from steps 1..k alone: each (problem, steps 1..k) is read once and
    cached (a search extends its beams a step at a time, so a round reads only the new last steps), and its
    tokens are charged once, to its first asker. Subclasses say how to read keys (`_read`)."""

    def __init__(self, verifier, prompt_for: Callable[[str], str], delimiter: str = "\n"):
        self.verifier, self.prompt_for, self.delimiter = verifier, prompt_for, delimiter
        self.cache: dict[tuple[str, tuple[str, ...]], tuple[float, int]] = {}

    def score_batch(self, problems, steps):
        for row in steps:
            _check_steps(row)
        keys = [(problem, tuple(row[:k])) for problem, row in zip(problems, steps) for k in range(1, len(row) + 1)]
        todo = list(dict.fromkeys(key for key in keys if key not in self.cache))
        if todo:
            self.cache.update(zip(todo, self._read(todo)))
        uncharged, result, start = set(todo), [], 0
        for row in steps:
            mine = keys[start : start + len(row)]
            start += len(row)
            fresh = [key for key in mine if key in uncharged]
            uncharged.difference_update(fresh)
            result.append(StepScores([self.cache[key][0] for key in mine], sum(self.cache[key][1] for key in fresh)))
        return result

    def _read(self, keys: list[tuple[str, tuple[str, ...]]]) -> list[tuple[float, int]]:
        """(step score of the last step, tokens computed) of each (problem, steps 1..k)."""
        raise NotImplementedError


class PathStepScorer(PrefixCachedScorer):
    """A re-solving checkpoint's path read (`verifier_path`) as a step scorer.

    Step k's score is read when the solution has k steps: the checkpoint's probability, re-solving after reading
    them with steps 1..k-1 teacher-forced, of writing step k next; for a step that only boxes the answer, of that
    answer as the last line's result and of the re-solve ending there (`solution_path`), so that a beam boxing its
    answer before the problem's last operation scores low. One teacher-forced read per beam per round.
    """

    name = "path"
    aggregation = "prod"
    """Search ranks by the product of the step scores unless told otherwise: the step by step `verifier_path`."""

    def _read(self, keys):
        from .unified import teacher_forced_reads

        checker = self.verifier.checker
        pairs = []
        for problem, row in keys:
            [check] = checker.prompts([problem], [self.prompt_for(problem)], [[self.delimiter.join(row)]])
            before, now = self._path(row[:-1]), self._path(row)
            common = _common_prefix(before, now)
            pairs.append(None if common == now else (check + common, now[len(common) :]))
        reads = teacher_forced_reads(checker.backend, pairs)
        return [(1.0, 0) if pair is None else read for pair, read in zip(pairs, reads)]

    def _path(self, row: Sequence[str]) -> str:
        from .unified import solution_path

        return solution_path(self.delimiter.join(row)) or "".join(step + "\n" for step in row)


class RecomputeStepScorer(PrefixCachedScorer):
    """A recompute checkpoint's check as a step scorer: step k's score is its probability of step k's line
    recomputed units digit first, after steps 1..k-1 (`tts_engine.verifiers.recompute`); a step that boxes the
    answer is read as the check's answer line. One teacher-forced read per beam per round."""

    name = "recompute"
    aggregation = "prod"
    """Search ranks by the product of the step scores unless told otherwise: the step by step `verifier_recompute`."""

    def _read(self, keys):
        from ..chain import is_task_problem
        from .recompute import check_query, step_pieces
        from .unified import teacher_forced_reads

        pairs = []
        for problem, row in keys:
            if not is_task_problem(problem):
                pairs.append(None)
                continue
            pieces = step_pieces(row)
            query = check_query(self.verifier.config, problem, self.prompt_for(problem))
            pairs.append((query + "".join(pieces[:-1]), pieces[-1]))
        return teacher_forced_reads(self.verifier.backend, pairs)


def _common_prefix(a: str, b: str) -> str:
    """The longest common prefix of a and b, cut back to end at a line break or "=" (never inside a number)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    if n == len(a) == len(b):
        return a
    return a[: max(a.rfind("\n", 0, n), a.rfind("=", 0, n)) + 1]


class UnifiedStepScorer(PrefixCachedScorer):
    """The unified verifier (RL^V) as a step scorer: step k's score is its Yes/No verdict on steps 1..k.

    `kind` picks the normalisation (verifier_yes_no or verifier_vocab).
    """

    name = "unified"

    def __init__(
        self, verifier, prompt_for: Callable[[str], str], delimiter: str = "\n", kind: str = "verifier_yes_no"
    ):
        if kind not in verifier.kinds:
            raise ValueError(f"kind must be one of {verifier.kinds}, got {kind!r}")
        super().__init__(verifier, prompt_for, delimiter)
        self.kind = kind

    def _read(self, keys):
        texts: dict[str, list[str]] = {}
        for problem, row in keys:
            texts.setdefault(problem, []).append(self.delimiter.join(row))
        problems = list(texts)
        scored = self.verifier.score(problems, [self.prompt_for(p) for p in problems], [texts[p] for p in problems])
        found = {
            (problem, text): (verdict.scores[self.kind], verdict.tokens)
            for problem, row in zip(problems, scored)
            for text, verdict in zip(texts[problem], row)
        }
        return [found[(problem, self.delimiter.join(row))] for problem, row in keys]
