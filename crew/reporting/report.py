"""report.md (with its plots as PNG files in report_files/) and a self-contained report.html."""

from __future__ import annotations

import logging
from pathlib import Path

from checkpoints import atomic_write_bytes, atomic_write_text
from crew.reporting.document import build_document
from crew.reporting.history import read_history
from crew.reporting.render import to_html, to_markdown
from crew.run.rundir import RunDir

log = logging.getLogger(__name__)


def write_reports(root: Path, title: str | None = None) -> tuple[Path, Path | None]:
    """Write both reports; a failure to plot costs the HTML and the plots, never report.md."""
    run = RunDir(Path(root))
    history = read_history(run.root)
    title = title or default_title(history.snapshot.config, run.root)
    try:
        doc = build_document(history, title)
    except Exception:  # matplotlib or a malformed file: the plain report still matters more
        log.warning("plots failed; report.md without them, no report.html", exc_info=True)
        atomic_write_text(run.report_md, to_markdown(build_document(history, title, with_plots=False), {}))
        return run.report_md, None
    plot_files = {}
    run.report_files.mkdir(exist_ok=True)
    for section in doc.sections:
        if section.plot:
            stem, png = section.plot
            atomic_write_bytes(run.report_files / f"{stem}.png", png)
            plot_files[stem] = f"{run.report_files.name}/{stem}.png"  # relative: the report moves with the run
    atomic_write_text(run.report_md, to_markdown(doc, plot_files))
    atomic_write_text(run.report_html, to_html(doc))
    return run.report_md, run.report_html


def default_title(config: dict, root: Path) -> str:
    """"<challenge title>: run <id>", from the challenge folder the run recorded (its name if that is gone)."""
    from challenges.framework.api import ChallengeError
    from challenges.framework.loader import load_challenge

    try:
        name = load_challenge(config["challenge_dir"]).title
    except (KeyError, ChallengeError, OSError):
        name = config.get("challenge", "run")
    return f"{name}: run {config.get('run_id', root.name)}"
