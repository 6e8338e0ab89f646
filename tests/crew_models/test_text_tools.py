"""Tool calls found in an answer's text (crew/agent/models/text_tools.py): the shapes small models write, and
JSON that is no call of a known tool left alone."""

from crew.agent.models.text_tools import find_text_calls

TOOLS = ["delegate", "wait", "submit"]


def test_the_shapes_small_models_write_are_found_in_order():
    text = """I'll delegate first.
```json
{"name": "delegate", "arguments": {"role": "engineer", "subtask": "train", "minutes": 5}}
```
<tool_call>
{"name": "wait", "arguments": {"minutes": 3}}
</tool_call>
Then {"type": "function", "function": {"name": "submit", "arguments": "{\\"evaluation_id\\": \\"eval-0001\\"}"}}"""
    calls = find_text_calls(text, TOOLS)
    assert [c["name"] for c in calls] == ["delegate", "wait", "submit"]
    assert calls[0]["arguments"] == '{"role": "engineer", "subtask": "train", "minutes": 5}'
    assert calls[2]["arguments"] == '{"evaluation_id": "eval-0001"}'
    assert find_text_calls('{"tool": "wait", "parameters": {"minutes": 1}}', TOOLS) == [
        {"name": "wait", "arguments": '{"minutes": 1}'}]


def test_json_that_names_no_known_tool_is_no_call():
    assert find_text_calls('The config is {"name": "gpt2", "arguments": {"layers": 12}}.', TOOLS) == []
    assert find_text_calls("Results: [0.5, 0.7] and {broken json", TOOLS) == []
    assert find_text_calls("I will wait for the job.", TOOLS) == []
