"""Deadlines: a slow check answers "timeout" near its deadline, from any thread, and the pool goes on.

The bounds below are generous (20 s for a 1 s deadline on a loaded machine): they check that the
deadline is enforced at all (the slow inputs here run for minutes otherwise), not speed.
"""

import threading
import time

import pytest

from tts_engine.answers import CheckPool, group_answers, is_equivalent

SLOW = "(1+\\sqrt{2})^{99999}"  # sympy expands this for minutes (it passes the guards: a plausible size)
BOUND_S = 20.0


def stubborn_check(gold, pred, symmetric=False):
    """A check that ignores anything a signal handler could raise (a bare except in a loop)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            time.sleep(0.05)
        except BaseException:
            pass
    return True


@pytest.fixture(scope="module")
def pool():
    with CheckPool(processes=1) as pool:
        yield pool


def timed(fn, *args, **kwargs):
    start = time.monotonic()
    result = fn(*args, **kwargs)
    return result, time.monotonic() - start


def test_pathological_check_times_out_and_pool_recovers(pool):
    (status, verdict), elapsed = timed(pool.check, SLOW, "5", timeout=1.0)
    assert (status, verdict) == ("timeout", None)
    assert elapsed < BOUND_S
    assert pool.check("\\frac{1}{2}", "0.5", timeout=5.0) == ("ok", True)  # a fresh worker took over
    assert pool.stats.timeouts >= 1 and pool.stats.restarts >= 1


def test_is_equivalent_timeout_is_undecided(pool):
    verdict, elapsed = timed(is_equivalent, "5", SLOW, timeout=1.0, pool=pool)
    assert verdict is None
    assert elapsed < BOUND_S


def test_group_answers_records_timeout_and_goes_on(pool):
    answers = ["1/2", SLOW, "0.5", SLOW, "3"]
    classes, elapsed = timed(group_answers, answers, timeout=1.0, pool=pool)
    assert classes.class_ids == [0, 1, 0, 1, 2]
    assert classes.statuses == ["ok", "timeout", "ok", "timeout", "ok"]
    assert classes.timeouts >= 1
    assert elapsed < 2 * BOUND_S


def test_slow_first_answer_is_blamed_not_the_next_one(pool):
    classes = group_answers([SLOW, "1/2", "0.5", SLOW], timeout=1.0, pool=pool)
    assert classes.class_ids == [0, 1, 1, 0]
    assert classes.statuses == ["timeout", "ok", "ok", "timeout"]


def test_deadline_holds_off_the_main_thread(pool):
    results = []
    thread = threading.Thread(target=lambda: results.append(timed(pool.check, SLOW, "5", timeout=1.0)))
    thread.start()
    thread.join(timeout=60)
    (status, _), elapsed = results[0]
    assert status == "timeout" and elapsed < BOUND_S


def test_a_check_that_swallows_exceptions_is_still_stopped():
    with CheckPool(processes=1, check_fn=stubborn_check) as stubborn:
        (status, verdict), elapsed = timed(stubborn.check, "1", "2", timeout=1.0)
        assert (status, verdict) == ("timeout", None)
        assert elapsed < BOUND_S
        classes = group_answers(["x+1", "x+2", "x+1"], timeout=1.0, pool=stubborn)
        assert classes.class_ids == [0, 1, 0]
        assert classes.statuses == ["timeout"] * 3  # every check is slow: both sides are recorded


def test_check_fn_must_be_module_level():
    with pytest.raises(ValueError, match="check_fn must be a module-level function"):
        CheckPool(check_fn=lambda gold, pred, symmetric=False: True)


def test_pool_arguments_are_validated():
    with pytest.raises(ValueError, match="processes must be an integer >= 1, got 0"):
        CheckPool(processes=0)
    with pytest.raises(ValueError, match="memory_limit_mb must be >= 256 or None, got 10"):
        CheckPool(memory_limit_mb=10)
