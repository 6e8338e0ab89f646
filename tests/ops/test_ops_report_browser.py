"""The report of a replayed run: report.md, a self-contained report.html with its plots, rendered in headless
Chromium with no console errors, and a screenshot saved to look at."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.crew.helpers import SUPERVISOR_OK, call, run_crew
from tests.ops.helpers import ARTIFACTS, chromium, invoke

# The engineer proposes a hypothesis, trains (a job that prints step and loss), evaluates, and a second,
# worse try that improves on the first.
TRAIN = "for i in $(seq 6); do echo progress: $i/6 loss 0.$((9 - i)); sleep 0.2; done; echo 0.75 > answer.txt"
ENGINEER = [
    call("propose_hypothesis", statement="A larger constant scores higher", rationale="the scorer reads the number"),
    call("start_job", command=TRAIN, name="train"),
    call("wait_for_job", job_id="001-train", until="exit", max_minutes=1),
    call("evaluate", artifact_path="answer.txt", hypothesis="a larger constant", job_id="001-train"),
    call("write_file", path="worse.txt", content="0.25"),
    call("evaluate", artifact_path="worse.txt", hypothesis="a smaller one", parent="eval-0001", kind="improve"),
    call("report", changed="answer.txt, worse.txt", commands="none", evaluations=["eval-0001", "eval-0002"],
         learned="0.75 scores best", proposes="submit eval-0001"),
]

# Runs before the page's own content: page errors, failed loads and console errors become console lines
# the test can find, and once loaded it says how many images decoded.
PROBE = """<script>
for (const level of ['error', 'warn']) { const original = console[level];
  console[level] = (...args) => original('PROBE-ERROR ' + level + ': ' + args.join(' ')); }
window.addEventListener('error',
  e => console.log('PROBE-ERROR page: ' + (e.message || e.target.outerHTML.slice(0, 80))), true);
window.addEventListener('load', () => { const imgs = [...document.images];
  console.log('PROBE-LOADED images=' + imgs.length + ' decoded=' + imgs.filter(i => i.naturalWidth > 0).length); });
</script>"""


@pytest.fixture(scope="module")
def reported_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("report")
    monkeypatch = pytest.MonkeyPatch()
    try:
        code, run, result, _ = run_crew(tmp_path, monkeypatch, {"supervisor": SUPERVISOR_OK, "engineer": ENGINEER})
        assert code == 0 and result["score"] == 0.75
        (run.root / "report.html").unlink()  # written at the end of the run; `report` writes it again
        invoke("report", str(run.root))
    finally:
        monkeypatch.undo()
    return run.root


def test_report_md_and_html_hold_every_section(reported_run):
    md = (reported_run / "report.md").read_text()
    for heading in ("## Summary", "## Plan against what happened", "## Evaluations (harness records)",
                    "## Training curves", "## Experiment tree", "## Hypotheses and outcomes",
                    "## Tokens and cost by agent", "## Unverified claims"):
        assert heading in md
    assert "eval-0001 (submitted)" in md and "| eval-0002 |" in md
    assert "A larger constant scores higher" in md  # the hypothesis, from the trace
    tree = ("- eval-0001 [draft] 0.7500 (full set): a larger constant", "    - eval-0002 [improve]")
    assert all(line in md for line in tree)
    assert "| 001-train | 6 |" in md  # the job's curve: six (step, loss) points
    for plot in ("timeline", "scores", "curves", "usage"):
        assert (reported_run / "report_files" / f"{plot}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (reported_run / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == 4
    # Self-contained: no reference to anything outside the file.
    assert not [ref for ref in re.findall(r'(?:src|href)="([^"]*)"', html) if not ref.startswith("data:")]
    assert "<script" not in html


@pytest.mark.skipif(chromium() is None, reason="needs Debian's chromium at /usr/bin/chromium "
                                                "(apt-get install -y chromium)")
def test_report_html_renders_in_headless_chromium_with_its_plots(reported_run, tmp_path):
    html = (reported_run / "report.html").read_text()
    page = tmp_path / "report-probed.html"
    page.write_text(html.replace("<head>", "<head>" + PROBE, 1))
    screenshot = tmp_path / "report.png"
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'ud'}",
               "--enable-logging=stderr", "--v=0", "--hide-scrollbars", "--window-size=1100,2400",
               f"--screenshot={screenshot}", page.as_uri()]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [line for line in console if "PROBE-ERROR" in line or "Uncaught" in line] == []
    assert any("PROBE-LOADED images=4 decoded=4" in line for line in console), console
    assert screenshot.stat().st_size > 50_000  # a page with four plots, not a blank one
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    saved = ARTIFACTS / "report_screenshot.png"
    shutil.copy(screenshot, saved)
    print(f"report screenshot: {saved}")
