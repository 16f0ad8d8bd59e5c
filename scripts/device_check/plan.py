"""What one run of the check measures: the GPU's full sizes, or the dry run's tiny ones."""

from __future__ import annotations

from dataclasses import dataclass, field

PEAK_BF16_TFLOPS = 790.0
"""Dense bf16 rate the H200 reaches (issue 16; the lent machines measured 769-798 TFLOP/s on an 8192^3
product). The verifier-score goal is stated against it; the machine section measures the rate again."""
DATASHEET_COPY_GBPS = 4800.0
"""H200 memory bandwidth by the datasheet (GB/s): the baseline of the measured device copy."""
SCORE_FLOOR_GOAL = 1.3
"""Goal: the fused verifier score within this factor of its compute floor."""
SCORE_MEMORY_GOAL = 10.0
"""Goal: the fused verifier score's peak memory at least this many times below the torch reference's."""
BACKEND_GOAL = 1.0
"""Goal (issue 41): HFBackend.generate at least this many times raw model.generate's static-cache tokens/s."""
ENGINE_GOAL = 0.9
"""Goal (issue 41): the engine (no verifier) at least this many times the backend's tokens/s."""

QWEN2_0_5B = dict(
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    vocab_size=151_936,
)
"""The shape of Qwen2.5-0.5B (randomly initialised here: nothing is downloaded)."""
QWEN2_1_5B = dict(
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    vocab_size=151_936,
)
"""The shape of Qwen2.5-1.5B (randomly initialised)."""


@dataclass(frozen=True)
class Plan:
    """Sizes, repeats and time limits of one run."""

    dry: bool
    """True: CPU, tiny shapes, Triton's interpreter (what the test suite runs)."""
    total_budget_s: float
    """Wall-clock limit of the whole run; a section that would start with less than its minimum left is
    skipped."""
    budgets_s: dict[str, float]
    """Section -> its own time limit (the section's process is killed past it)."""
    min_start_s: float
    """A section starts only with at least this many seconds left of the total."""
    repeats: int
    """Timed calls per kernel measurement (after one warm-up; the median is reported)."""
    matmul_size: int
    """Side of the square matrix product that measures the arithmetic ceiling."""
    copy_mib: int
    """MiB copied device to device to measure the memory ceiling."""
    score_shapes: tuple[tuple[int, int, int], ...]
    """(B, D, V) of the verifier-score measurements."""
    vote_shape: tuple[int, int, int]
    """(P problems, N samples, R subsets per problem) of the subset-vote measurements."""
    vote_ks: tuple[int, ...]
    """Subset sizes k voted (the prefix walk does all of them in one pass)."""
    model: dict = field(default_factory=dict)
    """Qwen2Config fields of the randomly initialised model of the generate section."""
    gen_prompts: int = 16
    """Bundled problems whose prompts the generate section samples from."""
    gen_n: int = 8
    """Samples per prompt in the generate section."""
    gen_max_new_tokens: int = 128
    """Tokens generated per sample in the generate section."""
    gen_repeats: int = 3
    """Timed runs of each generation path after its full-length warm-up (fewer when the section's time runs
    short)."""
    e2e_models: tuple[tuple[str, dict], ...] = ()
    """(label, Qwen2Config fields) of the randomly initialised checkpoints `tts solve` runs end to end."""
    e2e_prompts: int = 32
    """Bundled problems of each end-to-end run."""
    e2e_n: int = 64
    """Samples per problem of each end-to-end run."""
    e2e_max_new_tokens: int = 128
    """The fixed budget of each end-to-end sample (random weights seldom end a sample sooner)."""
    solve_args: tuple[str, ...] = ()
    """Extra `tts solve` options (the GPU run uses the command's defaults: 200 problems x 16 samples)."""
    test_select: str | None = None
    """pytest -k expression for the kernel tests (None: all of them)."""

    @property
    def device(self) -> str:
        return "cpu" if self.dry else "cuda"

    @property
    def score_dtype(self) -> str:
        return "float32" if self.dry else "bfloat16"


SECTIONS = ("machine", "score", "vote", "kernel_tests", "generate", "solve", "e2e", "train", "token_scores")
"""Run order: the kernels' figures first, the serving figures after (generate, solve, then `tts solve` end to end
at real shapes, issue 41: `--only machine --only generate --only solve --only e2e`), training's, then the
token-score race (issue 42; it takes what is left of the budget: alone, `--only token_scores`)."""

GPU_PLAN = Plan(
    dry=False,
    total_budget_s=480.0,
    budgets_s={
        "machine": 60,
        "score": 90,
        "vote": 75,
        "kernel_tests": 150,
        "generate": 200,
        "solve": 150,
        "e2e": 240,
        "train": 150,
        "token_scores": 300,
    },
    min_start_s=25.0,
    repeats=10,
    matmul_size=8192,
    copy_mib=2048,
    score_shapes=tuple((b, d, 152_064) for d in (1536, 3584) for b in (256, 1024, 4096)),
    vote_shape=(500, 256, 1000),
    vote_ks=(1, 4, 16, 64, 256),
    model=QWEN2_0_5B,
    e2e_models=(("Qwen2.5-0.5B shape", QWEN2_0_5B), ("Qwen2.5-1.5B shape", QWEN2_1_5B)),
)

DRY_MODEL = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    vocab_size=512,
)
"""The dry run's random Qwen2 (every generation section uses it)."""

DRY_PLAN = Plan(
    dry=True,
    total_budget_s=300.0,
    budgets_s={
        "machine": 60,
        "score": 60,
        "vote": 60,
        "kernel_tests": 120,
        "generate": 90,
        "solve": 120,
        "e2e": 90,
        "train": 90,
        "token_scores": 90,
    },
    min_start_s=5.0,
    repeats=1,
    matmul_size=256,
    copy_mib=16,
    score_shapes=((48, 64, 3001),),
    vote_shape=(4, 32, 40),
    vote_ks=(1, 8),
    model=DRY_MODEL,
    e2e_models=(("tiny", DRY_MODEL),),
    gen_prompts=2,
    gen_n=2,
    gen_max_new_tokens=8,
    gen_repeats=1,
    e2e_prompts=2,
    e2e_n=4,
    e2e_max_new_tokens=8,
    solve_args=("--limit", "2", "--n", "2", "--max-new-tokens", "24"),
    test_select="B1 or T1 or constructed_ties or accuracy_is_mean",
)
