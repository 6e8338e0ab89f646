"""The toolkit methods the crew registers (crew/loop/tools.py): every tool is typed and documented for the model."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

from crew.loop.tools import ENGINEER_TOOLKIT, SCOUT_TOOLKIT
from toolkit import PhaseClock, Toolkit, ToolkitError


def test_every_tool_is_a_typed_documented_method(tmp_path: Path) -> None:
    tk = Toolkit(tmp_path / "run")
    for tool in (getattr(tk, name) for name in dict.fromkeys(ENGINEER_TOOLKIT + SCOUT_TOOLKIT)):
        doc = inspect.getdoc(tool) or ""
        assert len(doc) > 40, f"{tool.__name__} needs a docstring the model can act on"
        hints = typing.get_type_hints(tool)
        params = [p for p in inspect.signature(tool).parameters if p != "self"]
        assert all(p in hints for p in params) and "return" in hints, tool.__name__


def test_layout_under_the_run_dir(tmp_path: Path) -> None:
    tk = Toolkit(tmp_path / "run")
    assert tk.workspace == tmp_path / "run" / "workspace" and tk.workspace.is_dir()
    tk.run_bash("true", timeout_s=10)
    assert list((tmp_path / "run" / "logs").glob("*.log"))
    custom = Toolkit(tmp_path / "run2", workspace=tmp_path / "elsewhere")
    assert custom.workspace == tmp_path / "elsewhere"


def test_budget_protocol_and_error_type() -> None:
    class Budget:
        def phase_left_s(self) -> float:
            return 5.0

    assert isinstance(Budget(), PhaseClock)
    err = ToolkitError("bad thing", "do this instead")
    assert str(err) == "bad thing (do this instead)" and err.hint == "do this instead"
