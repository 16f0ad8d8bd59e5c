"""Property-based checks: arbitrary text never makes extraction, normalisation, classes or grading raise."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tts_engine.answers import CheckPool, extract_answer, grade_answers, group_answers
from tts_engine.answers.forms import answer_form, quick_verdict

LATEX_ALPHABET = "\\{}()[]$^_,.=<>|&%:;! 0123456789abxyzABC+-*/boxedfracsqrtleftrigh\ud800\udfff\u2212°π∞"
any_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=200)
latex_text = st.text(alphabet=LATEX_ALPHABET, max_size=80)
answer = st.one_of(
    st.none(), latex_text, any_text, st.sampled_from(["1/2", "0.5", "\\frac{1}{2}", "3", "x=3", "(0,1]"])
)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def pool():
    with CheckPool(processes=2) as pool:
        yield pool


@FAST
@given(st.one_of(any_text, latex_text, latex_text.map(lambda t: "\\boxed{" + t)))
def test_extract_never_raises(text):
    result = extract_answer(text)
    assert result is None or (isinstance(result, str) and result == result.strip() and result)


@FAST
@given(st.one_of(any_text, latex_text))
def test_forms_never_raise_and_are_reflexive(text):
    form = answer_form(text)
    assert form.kind in ("math", "text", "choice", "empty", "uncheckable")
    assert quick_verdict(form, form) is (form.kind != "empty")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(answer, max_size=8))
def test_group_answers_is_consistent(pool, answers):
    classes = group_answers(answers, timeout=2.0, pool=pool)
    assert len(classes.class_ids) == len(answers) == len(classes.statuses)
    seen: dict[str, int] = {}
    next_id = 0
    for raw, class_id, status in zip(answers, classes.class_ids, classes.statuses):
        if class_id == -1:
            assert status == "no_answer"
            continue
        assert status in ("ok", "timeout", "unparsable")
        seen.setdefault(raw.strip(), class_id)
        assert seen[raw.strip()] == class_id  # equal strings, equal classes
        assert class_id <= next_id  # ids in order of first appearance
        next_id = max(next_id, class_id + 1)
    assert classes.num_classes == next_id


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(answer, answer), max_size=6))
def test_grading_never_raises(pool, pairs):
    verdicts = grade_answers([r for r, _ in pairs], [a for _, a in pairs], timeout=2.0, pool=pool)
    assert len(verdicts) == len(pairs)
    assert all(v in (True, False, None) for v in verdicts)
