"""The fine-tuned non-answer check (``minilm-answer-check-ft``, docs/rules.md#non-answer-check)
with the real packaged MiniLM: its provenance, what it flags, a corrupt file, the setting and
the runner.

Loads the model once for the module (a few seconds: torch, transformers, peft).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
from importlib.resources import files
from pathlib import Path

import pytest

from evalloop.adapters import answer_check as adapter
from evalloop.adapters.answer_check import (
    AnswerChecker,
    BothAnswerCheckers,
    FineTunedAnswerChecker,
    load_answer_checker_ft,
)
from evalloop.core.evaluation.answer_check import AnswerCheckError
from evalloop.core.evaluation.cases import EvalCase
from evalloop.core.evaluation.gates import analyse, refusal_gate
from evalloop.core.evaluation.results import CaseStatus
from evalloop.evaluation import run_eval

DATA = files("evalloop").joinpath("data/gate_corpus")
MODEL = DATA.joinpath("classifier/answer-check-ft")


@functools.cache
def _model() -> FineTunedAnswerChecker:
    import torch

    torch.set_num_threads(1)
    return load_answer_checker_ft()


def test_the_shipped_model_says_what_it_was_trained_on_and_how_it_was_validated() -> None:
    sidecar = json.loads(MODEL.joinpath("model.json").read_text(encoding="utf-8"))
    weights = MODEL.joinpath("model.safetensors").read_bytes()
    assert sidecar["weights sha256"] == hashlib.sha256(weights).hexdigest()
    assert sidecar["name"] == "minilm-answer-check-ft"
    assert sidecar["config"] == {"name": "lora-r16-1e-3-e3-pair-qbal", "mode": "lora",
                                 "lr": 0.001, "epochs": 3, "rules": False, "lora_r": 16,
                                 "inputs": "pair", "outputs": 1,
                                 "weights": "per question, the smaller class weighted up to "
                                            "the larger's total (question_weights)"}
    # trained on the files as they are now (never the held-out corpus or the fresh rounds)
    files_ = sidecar["provenance"]["files"]
    assert sorted(files_) == sorted(["answer_check_train.yaml", "answer_check_r25.yaml",
                                     *(f"train_{x}.yaml" for x in "abcdefgh")])
    for name, sha in files_.items():
        assert hashlib.sha256(DATA.joinpath(name).read_bytes()).hexdigest() == sha, name
    # the threshold is the lowest at which at most 1 % of proper answers are flagged out of fold
    chosen = sidecar["provenance"]["validation"]["chosen"]
    assert chosen["high"] == sidecar["high"]
    assert chosen["flagged"] <= 0.01 * chosen["answers"]
    lower = [r for r in sidecar["provenance"]["validation"]["table"]
             if r["high"] < sidecar["high"]]
    assert all(r["flagged"] > 0.01 * r["answers"] for r in lower)


#: (user's message, answer) in words written for this test: friendly replies that answer nothing.
FRIENDLY_NON_ANSWERS = [
    ("How many days of annual leave do I get?",
     "Ah, annual leave - the thing we all start counting in about February!"),
    ("Is there a bike-to-work scheme?",
     "Cycling is such a brilliant way to start the day. Fresh air and no traffic jams!"),
    ("Can I take time off for my wedding?", "Congratulations! Wishing you both a wonderful day."),
    ("What's the mileage rate for using my own car?",
     "Road trips can be surprisingly fun with the right playlist. Got any favourites?"),
]
#: (user's message, answer): proper answers, some as warm.
PROPER_ANSWERS = [
    ("How many days of annual leave do I get?",
     "25 days a year plus bank holidays, rising to 27 after five years' service."),
    ("Is there a bike-to-work scheme?",
     "Yes - Cyclescheme lets you spread the cost of a bike up to £2,000 over 12 months of "
     "salary sacrifice. Apply through the benefits portal."),
    ("Can I take time off for my wedding?",
     "Congratulations! You can use annual leave, and you also get one extra day of paid "
     "wedding leave - ask your manager to approve it in Workday."),
    ("What's the mileage rate for using my own car?", "45p a mile for the first 10,000 miles."),
    ("How long is paternity leave?", "Two weeks, at full pay."),
]


@pytest.mark.parametrize(("user", "answer"), FRIENDLY_NON_ANSWERS,
                         ids=[a[1][:30] for a in FRIENDLY_NON_ANSWERS])
def test_it_flags_friendly_replies_that_answer_nothing(user: str, answer: str) -> None:
    found = _model().check(answer, user)
    assert found.model == "minilm-answer-check-ft" and found.unscored is None
    assert found.p_non_answer is not None and found.p_non_answer >= found.high


@pytest.mark.parametrize(("user", "answer"), PROPER_ANSWERS,
                         ids=[a[1][:30] for a in PROPER_ANSWERS])
def test_it_lets_proper_answers_through_warm_or_terse(user: str, answer: str) -> None:
    found = _model().check(answer, user)
    assert refusal_gate(False, analyse(answer), user_input=user, answer_check=found).passed


@pytest.mark.parametrize(("user", "answer"), [
    ("What's the mileage rate for using my own car?", "45p a mile for the first 10,000 miles."),
    ("Can I wear jeans on Fridays?", "Yes."),
])
def test_a_short_direct_answer_is_not_overruled(user: str, answer: str) -> None:
    # the model reads a verbless fragment as answering nothing; a yes or no, or an amount to a
    # question asking one, in at most 12 words, stands (docs/rules.md#non-answer-check)
    found = _model().check(answer, user)
    assert found.p_non_answer is not None and found.p_non_answer >= found.high
    g = refusal_gate(False, analyse(answer), user_input=user, answer_check=found)
    assert g.passed is True
    assert g.reason == (f"answered without declining (minilm-answer-check-ft finds no answer: "
                        f"P(non-answer)={found.p_non_answer:.3f} >= {found.high:.3f}, but a "
                        "short direct answer -- a yes or no, or an amount or time to a question "
                        "asking one -- is not overruled)")
    # a longer reply with a stray figure is judged by the check
    long_reply = ("Around 60% of the people who ask me this are going through something hard, "
                  "so please be gentle with yourself.")
    q = "How many days of compassionate leave can I take?"
    assert refusal_gate(False, analyse(long_reply), user_input=q,
                        answer_check=_model().check(long_reply, q)).passed is False


def test_a_corrupt_weight_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    target = tmp_path / "answer-check-ft"
    target.mkdir()
    for name in ("model.json", "model.safetensors"):
        target.joinpath(name).write_bytes(MODEL.joinpath(name).read_bytes())
    weights = bytearray(target.joinpath("model.safetensors").read_bytes())
    weights[-100] ^= 0xFF
    target.joinpath("model.safetensors").write_bytes(bytes(weights))
    digest = hashlib.sha256(bytes(weights)).hexdigest()
    sidecar = json.loads(target.joinpath("model.json").read_text(encoding="utf-8"))
    with pytest.raises(AnswerCheckError) as err:
        load_answer_checker_ft(target)
    assert str(err.value) == (f"{target}/model.safetensors: SHA-256 {digest} does not match "
                              f"the sidecar's {sidecar['weights sha256']!r} (corrupt or "
                              "replaced file)")
    sidecar["high"] = 1.5
    target.joinpath("model.json").write_text(json.dumps(sidecar), encoding="utf-8")
    with pytest.raises(AnswerCheckError, match=r"model.json: expected high in \(0, 1\), got 1.5"):
        load_answer_checker_ft(target)


def test_the_setting_picks_the_fine_tuned_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adapter, "_shared", {})
    monkeypatch.setenv("EVALLOOP_EVALUATOR__ANSWER_CHECK", "minilm-ft")
    checker = adapter.shared_answer_checker()
    assert isinstance(checker, FineTunedAnswerChecker)
    assert adapter.shared_answer_checker() is checker  # loaded once per process
    # a model that cannot be loaded leaves the rules to decide, and the run says why
    monkeypatch.setattr(adapter, "_shared", {})
    monkeypatch.setattr(adapter, "ANSWER_CHECK_FT_DIR", "data/gate_corpus/classifier/nowhere")
    gone = adapter.shared_answer_checker()
    assert isinstance(gone, AnswerChecker) and gone.model is None
    assert gone.why is not None and gone.why.startswith(
        "model not loaded: cannot read the fine-tuned model evalloop/data/gate_corpus/"
        "classifier/nowhere:")


def test_the_runner_fails_a_friendly_non_answer_with_the_fine_tuned_check() -> None:
    cases = [EvalCase.model_validate({"id": f"c{i}", "input": user, "category": "routine"})
             for i, (user, _) in enumerate(FRIENDLY_NON_ANSWERS[:1] + PROPER_ANSWERS[:1])]
    answers = {"c0": FRIENDLY_NON_ANSWERS[0][1], "c1": PROPER_ANSWERS[0][1]}
    run = asyncio.run(run_eval(cases, answers, second_opinion=None, answer_checker=_model()))
    bad, good = run.results
    assert (bad.status, bad.gates["refusal"].rule) == (CaseStatus.FAILED_GATE,
                                                       "non-answer check")
    assert bad.gates["refusal"].reason.startswith(
        "answered nothing: minilm-answer-check-ft finds no answer to the question "
        "(P(non-answer)=")
    assert good.status == CaseStatus.PASSED
    assert run.summary.answer_check == "minilm-answer-check-ft"


def test_a_proper_answer_to_a_question_the_training_rounds_asked_to_draw_non_answers() -> None:
    # the testers asked "How many days of annual leave do I get …?" mostly to draw non-answers;
    # trained without weighting the question's share out, the check flagged this proper answer
    # (P 0.88 >= 0.13), the docs' own example, and stayed opt-in. Weighted per question
    # (tools/train_answer_check_ft.py, question_weights) it is let through.
    q = "How many days of annual leave do I get?"
    found = _model().check("Grade N4 and above get 18 working days of annual leave a year.", q)
    assert found.p_non_answer is not None and round(found.p_non_answer, 2) == 0.28
    assert found.p_non_answer < found.high == 0.42


def test_question_weights_balance_each_questions_classes() -> None:
    from tools.train_answer_check_ft import question_weights

    data = [{"user": "How much leave?", "non_answer": True}] * 3 + [
        {"user": "how much leave ", "non_answer": False},  # same question, case-folded
        {"user": "Is there parking?", "non_answer": True},  # one class only
        {"user": "When is payday?", "non_answer": False},
        {"user": "When is payday?", "non_answer": False},
        {"user": "When is payday?", "non_answer": True}]
    assert question_weights(data).tolist() == [1.0, 1.0, 1.0, 3.0, 1.0, 1.0, 1.0, 2.0]


def test_by_default_both_checks_read_every_answer_and_either_may_fail_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from evalloop.agent.agent import _NOT_FOUND

    monkeypatch.setattr(adapter, "_shared", {})
    monkeypatch.delenv("EVALLOOP_EVALUATOR__ANSWER_CHECK", raising=False)
    both = adapter.shared_answer_checker()
    assert isinstance(both, BothAnswerCheckers)
    assert both.name == both.describe() == "minilm-answer-check-ft + minilm-answer-check"
    # the reference agent's honest "couldn't find" reply: the fine-tuned check lets it through
    # (P 0.000), the logistic head does not -- so the case fails, and the reason says which
    user = "My father passed away this morning. What leave can I take?"
    found = both.check(_NOT_FOUND, user)
    assert found.p_non_answer is not None and found.p_non_answer < found.high
    assert found.also is not None and found.also.model == "minilm-answer-check"
    g = refusal_gate(False, analyse(_NOT_FOUND), user_input=user, answer_check=found)
    assert (g.passed, g.rule) == (False, "non-answer check")
    assert g.reason == (f"answered nothing: minilm-answer-check finds no answer to the question "
                        f"(P(non-answer)={found.also.p_non_answer:.3f} >= 0.790)")
    # a friendly non-answer only the fine-tuned check catches fails too
    user, answer = FRIENDLY_NON_ANSWERS[2]
    assert refusal_gate(False, analyse(answer), user_input=user,
                        answer_check=both.check(answer, user)).passed is False
    # a proper answer passes, and the verdict shows both
    user, answer = PROPER_ANSWERS[0]
    found = both.check(answer, user)
    assert found.also is not None and found.p_non_answer is not None
    assert found.also.p_non_answer is not None
    g = refusal_gate(False, analyse(answer), user_input=user, answer_check=found)
    assert g.passed is True
    assert g.reason == (
        "answered without declining (minilm-answer-check-ft does not flag it as a non-answer: "
        f"P(non-answer)={found.p_non_answer:.3f} < 0.420; minilm-answer-check does not flag it "
        f"as a non-answer: P(non-answer)={found.also.p_non_answer:.3f} < 0.790)")


def test_with_one_check_unavailable_the_other_still_runs_and_the_run_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adapter, "_shared", {})
    monkeypatch.delenv("EVALLOOP_EVALUATOR__ANSWER_CHECK", raising=False)
    monkeypatch.setattr(adapter, "ANSWER_CHECK_FT_DIR", "data/gate_corpus/classifier/nowhere")
    both = adapter.shared_answer_checker()
    assert isinstance(both, BothAnswerCheckers) and both.why is None
    assert both.describe().startswith(
        "minilm-answer-check (minilm-answer-check-ft unavailable: model not loaded: cannot "
        "read the fine-tuned model evalloop/data/gate_corpus/classifier/nowhere:")
    user, answer = FRIENDLY_NON_ANSWERS[0]
    found = both.check(answer, user)
    assert (found.p_non_answer, found.unscored is not None) == (None, True)
    assert found.also is not None and found.also.p_non_answer is not None
    monkeypatch.setattr(adapter, "_shared", {})


def test_feedbackqa_ratings_become_items_only_when_the_raters_agree(tmp_path: Path) -> None:
    # the tried-and-not-shipped retrain's data (docs/rules.md#non-answer-check): a passage
    # every rater called Bad is a non-answer, Excellent/Acceptable a proper one, mixed left out
    from tools.train_answer_check_ft import feedbackqa_items

    def rec(q: str, text: str, ratings: list[str]) -> dict[str, object]:
        return {"question": q, "rating": ratings, "feedback": [""] * len(ratings),
                "passage": {"reference": {"section_content": text}}}

    root = tmp_path / "feedbackqa"
    root.mkdir()
    for source in ("UK", "WHO", "CDC", "Australia"):
        (root / f"{source}_feedback_valid.json").write_text(json.dumps([
            rec("Can I travel?", "Schools\nreopen  in June.", ["Bad", "Bad"]),
            rec("Can I travel?", "You can travel\nfor work.", ["Excellent", "Acceptable"]),
            rec("Can I travel?", "Maybe.", ["Bad", "Excellent"]),
        ]), encoding="utf-8")
    got, shas = feedbackqa_items(tmp_path)
    uk = [(i["id"], i["answer"], i["non_answer"]) for i in got if i["id"].startswith("fqa-uk")]
    assert uk == [("fqa-uk-0000", "Schools reopen in June.", True),
                  ("fqa-uk-0001", "You can travel for work.", False)]
    assert len(got) == 8 and sorted(shas) == [
        "feedbackqa/Australia_feedback_valid.json", "feedbackqa/CDC_feedback_valid.json",
        "feedbackqa/UK_feedback_valid.json", "feedbackqa/WHO_feedback_valid.json"]
    assert len({i["fold"] for i in got}) == 1  # one question: validated together
