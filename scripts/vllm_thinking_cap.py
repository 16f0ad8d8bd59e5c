"""What vLLM's own thinking cap (`SamplingParams.thinking_token_budget`) writes, on a tiny checkpoint of a thinking
model's shape: once into a trace still open (where a cap belongs) and once into a trace the prompt has already closed
(`</think>` written: the model ended its thinking on its own, and a cap must leave its answer alone).

The engine's thinking strategies cap traces through ordinary generate calls instead: vLLM recognises the end of
thinking only as the whole text it forces (the model's `answer_forcing`, which goes on past `</think>`), so a trace
that ended on its own is still counted, and the forcing text lands in its answer (docs/thinking.md).

    python scripts/vllm_thinking_cap.py [--budget 8]          (needs vLLM; on a CPU: VLLM_CPU_KVCACHE_SPACE=1)
"""

from __future__ import annotations

import argparse
import os
import tempfile

from tts_engine.inputs.tiny import TinyModelConfig, save_tiny_checkpoint

FORCING = "\n</think>\n\nFinal answer: \\boxed{"
PROMPTS = {"open trace": "1+1<think>\n", "closed trace": "1+1<think>\nab\n</think>\n\n"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=8)
    args = parser.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from vllm import LLM, SamplingParams
    from vllm.config.reasoning import ReasoningConfig

    with tempfile.TemporaryDirectory() as folder:
        config = TinyModelConfig(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128)
        model = save_tiny_checkpoint(folder, config, thinking=True)
        cap = ReasoningConfig(reasoning_start_str="<think>", reasoning_end_str=FORCING)
        llm = LLM(model=str(model), dtype="float32", enforce_eager=True, reasoning_config=cap, max_model_len=256)
        params = SamplingParams(temperature=0.0, max_tokens=40, thinking_token_budget=args.budget)
        for name, prompt in PROMPTS.items():
            text = llm.generate([prompt], params)[0].outputs[0].text
            print(f"{name}: {prompt!r} -> {text!r}")
            print(f"  the forcing text written: {FORCING in text}")


if __name__ == "__main__":
    main()
