"""The bounded context (cap, pairs kept together, anchors) and the ledger's check of cited numbers."""

from __future__ import annotations

import json

import pytest

from challenges.framework.api import ScoreContext
from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge
from crew.agent.context import ELIDED, NOTE_PREFIX, BoundedContext, Message
from crew.agent.replay import load_script
from crew.errors import CrewError
from crew.run.ledger import Ledger
from tests.foundation.helpers import write_challenge


def exchange(i: int, output_chars: int, thought: str = "", argument_chars: int = 0) -> list[Message]:
    arguments = {"command": f"echo {i}"} | ({"content": "y" * argument_chars} if argument_chars else {})
    call = {"id": f"c{i}", "name": "run_bash", "arguments": json.dumps(arguments)}
    return [Message("assistant", thought, calls=[call]),
            Message("tool", results=[{"call_id": f"c{i}", "name": "run_bash", "content": "x" * output_chars,
                                      "is_error": False}])]


def fill(context: BoundedContext, exchanges: int, output_chars: int, **kwargs) -> list[Message]:
    context.add(Message("user", "BRIEF: train a model"))
    for i in range(exchanges):
        for message in exchange(i, output_chars, **kwargs):
            context.add(message)
    return context.messages


def sent_chars(messages: list[Message]) -> int:
    """Everything the API receives of these messages, counted independently of crew.agent.context."""
    return sum(len(m.text) + sum(len(c["name"]) + len(c["arguments"]) for c in m.calls)
               + sum(len(r["name"]) + len(r["content"]) for r in m.results) for m in messages)


@pytest.mark.parametrize("output_chars", [40, 4000])
def test_context_stays_under_its_cap_and_keeps_calls_with_results(output_chars):
    context = BoundedContext(max_tokens=3000, anchors=1, max_messages=120)
    messages = fill(context, 400, output_chars)
    assert context.tokens() <= 3000 and len(messages) <= 120
    assert messages[0].text == "BRIEF: train a model"  # the anchor stays
    assert messages[1].text.startswith(NOTE_PREFIX) and context.dropped
    for index, message in enumerate(messages):
        if message.role == "tool":
            calls = messages[index - 1]
            assert calls.role == "assistant"
            assert {c["id"] for c in calls.calls} == {r["call_id"] for r in message.results}
    assert messages[-1].results[0]["content"] == "x" * output_chars  # the recent window is never elided


def test_thoughts_and_long_tool_arguments_count_and_are_elided():
    """The cap holds for what is sent: thoughts and arguments (e.g. write_file content) included."""
    context = BoundedContext(max_tokens=8000, anchors=1, recent=4)
    messages = fill(context, 200, 40, thought="t" * 560, argument_chars=3000)
    assert sent_chars(messages) // 4 <= 8000
    calls = [json.loads(m.calls[0]["arguments"]) for m in messages if m.role == "assistant"]
    assert any(ELIDED in c["content"] for c in calls) and any(ELIDED in m.text for m in messages[2:])
    assert all(c["command"].startswith("echo") for c in calls)  # an elided call is still a JSON object


def test_dropped_exchanges_are_summarised_in_the_note():
    context = BoundedContext(max_tokens=3000, anchors=1)
    messages = fill(context, 100, 400)
    note = messages[1].text
    assert note.startswith(NOTE_PREFIX)
    newest_dropped = int(json.loads(context.messages[2].calls[0]["arguments"])["command"].split()[1]) - 1
    assert f'run_bash({{"command": "echo {newest_dropped}"}}) -> xxxx' in note  # what a dropped call did
    assert f"({newest_dropped + 1 - 20} older exchanges)" in note  # the note itself stays bounded


def test_the_estimate_is_calibrated_by_the_reported_prompt_size():
    context = BoundedContext(max_tokens=4000, anchors=1)
    fill(context, 10, 400)
    before = context.tokens()
    context.calibrate(reported_prompt_tokens=2 * context.estimate(), estimated_prompt_tokens=context.estimate())
    assert context.scale > 1.2 and context.tokens() > before
    fill(context, 100, 400)
    assert context.tokens() <= 4000  # the cap holds in the API's tokens


def test_old_tool_outputs_are_elided_before_anything_is_dropped():
    context = BoundedContext(max_tokens=10_000, anchors=1, recent=4)
    messages = fill(context, 12, 4000)  # about 12,000 tokens of tool output
    assert not context.dropped and len(messages) == 25
    elided = [m for m in messages if m.role == "tool" and ELIDED in m.results[0]["content"]]
    assert len(elided) >= 5 and context.tokens() <= 10_000


def test_a_snapshot_and_its_journal_restore_the_same_context():
    context = BoundedContext(max_tokens=2000, anchors=1)
    fill(context, 50, 500)
    journal = dict(context.fresh_messages())
    copy = BoundedContext(max_tokens=2000, anchors=1)
    copy.restore(json.loads(json.dumps(context.snapshot())), journal)
    assert copy.messages == context.messages
    assert copy.tokens() == context.tokens()


def test_ledger_flags_numbers_that_no_record_backs(tmp_path):
    challenge = load_challenge(write_challenge(tmp_path / "c", "toy"))
    answer = tmp_path / "a.txt"
    answer.write_text("0.6123")
    ctx = ScoreContext(challenge="toy", preset="smoke", data_dir=tmp_path, private_dir=tmp_path,
                       scratch_dir=tmp_path / "s")
    evaluate(challenge, answer, ctx, tmp_path / "evals")
    ledger = Ledger(tmp_path / "evals", challenge)
    assert ledger.unverified_claims("The evaluation scored 0.61 and then 61.2% accuracy.") == []
    flagged = ledger.unverified_claims("My new model reaches a score of 0.84; it trained 2000 steps at lr 0.001.")
    assert [c.value for c in flagged] == ["0.84"]
    assert [c.value for c in ledger.unverified_claims("accuracy improved to 72%")] == ["72%"]


def test_a_broken_replay_script_is_a_clear_error(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("supervisor: [ {text: 'a'\n")
    with pytest.raises(CrewError, match="not valid JSON or YAML"):
        load_script(bad)
    bad.write_text("- just a list\n")
    with pytest.raises(CrewError, match="must map agent names"):
        load_script(bad)
    with pytest.raises(CrewError, match="does not exist"):
        load_script(tmp_path / "missing.yaml")
