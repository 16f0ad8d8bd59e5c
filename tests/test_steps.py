"""split_steps: tags when present, else non-blank lines; step-end tokens for step rewards."""

from tts_engine.verifiers.steps import split_steps, step_end_tokens, step_spans


def test_lines_ignore_blank_lines_and_keep_the_boxed_line():
    solution = "28*4=112\n\n112-18=94\n  \n94+80=174\n\\boxed{174}\n"
    assert split_steps(solution) == ["28*4=112", "112-18=94", "94+80=174", "\\boxed{174}"]


def test_tags_win_over_lines_and_may_span_lines():
    solution = "intro line\n<step>First,\nadd.</step>\nnoise\n<step> 3+4=7 </step><step></step>"
    assert split_steps(solution) == ["First,\nadd.", "3+4=7"]


def test_spans_point_into_the_text():
    solution = "a=1\n\n  b=2  \n"
    assert [solution[s:e] for s, e in step_spans(solution)] == ["a=1", "b=2"]


def test_empty_solution_has_no_steps():
    assert split_steps("") == [] and split_steps("\n \n") == []


def test_step_end_tokens_char_tokens():
    solution = "1+2=3\n3*2=6\n\\boxed{6}"
    ends = step_end_tokens(solution, list(solution))
    assert [solution[t] for t in ends] == ["3", "6", "}"]
    assert ends == [4, 10, 20]


def test_step_end_tokens_multi_char_tokens():
    # tokens "ab", "c\n", "de": step "abc" ends inside token 1, step "de" in token 2
    assert step_end_tokens("abc\nde", ["ab", "c\n", "de"]) == [1, 2]
