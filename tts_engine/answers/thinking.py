"""A thinking model's sample: a trace between markers (R1, Qwen3: `<think>` ... `</think>`), then the answer. The
answer is read after the trace; a trace cut before its end holds no answer (its tentative answers are thinking,
not an answer). A sample with neither marker is read as a whole, as before thinking models."""

from __future__ import annotations

from dataclasses import dataclass

from .extract import extract_answer


@dataclass(frozen=True)
class ThinkingMarkers:
    """Where a sample's trace starts and ends (the model's prompt settings name them). An empty start: the trace
    opens where the completion starts (a model that thinks from its first token, or a template that opens the trace
    in the prompt), and only its end is written."""

    start: str = "<think>"
    end: str = "</think>"


def split_thinking(text: str, markers: ThinkingMarkers) -> tuple[str | None, str | None]:
    """(trace, answer part) of a sample: the text up to the end of its last trace and the text after it; (None,
    text) for a sample with no trace; (text, None) for a trace cut before its end. A model whose template opens the
    trace in the prompt writes only the end marker: the trace is what comes before it."""
    if markers.end and markers.end in text:
        cut = text.rindex(markers.end) + len(markers.end)
        return text[:cut], text[cut:]
    if markers.end and (not markers.start or markers.start in text):
        return text, None
    return None, text


def answer_after_thinking(text: str, markers: ThinkingMarkers) -> str | None:
    """The final answer of a sample, read after its trace (None for a trace cut before its end)."""
    _, answer = split_thinking(text, markers)
    return extract_answer(answer) if answer is not None else None
