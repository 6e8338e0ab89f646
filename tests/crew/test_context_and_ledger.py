"""The bounded context (cap, pairs kept together, anchors) and the ledger's check of cited numbers."""

from __future__ import annotations

import asyncio
import json

import pytest
from autogen_core import FunctionCall
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    UserMessage,
)

from challenges.api import ScoreContext
from challenges.harness import evaluate
from challenges.loader import load_challenge
from crew.context import ELIDED, BoundedContext
from crew.errors import CrewError
from crew.ledger import Ledger
from crew.replay import load_script
from tests.foundation.helpers import write_challenge


def exchange(i: int, output_chars: int):
    call = FunctionCall(id=f"c{i}", name="run_bash", arguments=json.dumps({"command": f"echo {i}"}))
    return [AssistantMessage(content=[call], source="engineer"),
            FunctionExecutionResultMessage(content=[FunctionExecutionResult(
                content="x" * output_chars, call_id=f"c{i}", name="run_bash", is_error=False)])]


def fill(context: BoundedContext, exchanges: int, output_chars: int) -> list:
    async def go():
        await context.add_message(UserMessage(content="BRIEF: train a model", source="crew"))
        for i in range(exchanges):
            for message in exchange(i, output_chars):
                await context.add_message(message)
        return await context.get_messages()
    return asyncio.run(go())


@pytest.mark.parametrize("output_chars", [40, 4000])
def test_context_stays_under_its_cap_and_keeps_calls_with_results(output_chars):
    context = BoundedContext(max_tokens=3000, anchors=1, max_messages=120)
    messages = fill(context, 400, output_chars)
    assert context.tokens() <= 3000 and len(messages) <= 120
    assert messages[0].content == "BRIEF: train a model"  # the anchor stays
    assert "omitted" in messages[1].content and context.dropped > 0
    for index, message in enumerate(messages):
        if isinstance(message, FunctionExecutionResultMessage):
            calls = messages[index - 1]
            assert isinstance(calls, AssistantMessage)
            assert {c.id for c in calls.content} == {r.call_id for r in message.content}
    last = messages[-1]
    assert last.content[0].content == "x" * output_chars  # the recent window is never elided


def test_old_tool_outputs_are_elided_before_anything_is_dropped():
    context = BoundedContext(max_tokens=10_000, anchors=1, recent=4)
    messages = fill(context, 12, 4000)  # about 12,000 tokens of tool output
    assert context.dropped == 0 and len(messages) == 25
    elided = [m for m in messages if isinstance(m, FunctionExecutionResultMessage) and ELIDED in m.content[0].content]
    assert len(elided) >= 5 and context.tokens() <= 10_000


def test_a_snapshot_and_its_journal_restore_the_same_context():
    context = BoundedContext(max_tokens=2000, anchors=1)
    fill(context, 50, 500)
    journal = dict(context.fresh_messages())
    copy = BoundedContext(max_tokens=2000, anchors=1)
    copy.restore(json.loads(json.dumps(context.snapshot())), journal)
    assert asyncio.run(copy.get_messages()) == asyncio.run(context.get_messages())
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
