"""The report document as markdown (PNG files beside it) and as one self-contained HTML file (PNGs inline)."""

from __future__ import annotations

import base64
import html

from crew.reporting.document import Document, Section, Table

CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } dl { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; }
dt { font-weight: 600; } dd { margin: 0; } img { max-width: 100%; border: 1px solid #eee; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: 12px; } caption { text-align: left; }
"""


def to_markdown(doc: Document, plot_files: dict[str, str]) -> str:
    """Markdown; plots are linked from `plot_files` (stem -> relative file name) when given."""
    lines = [f"# {doc.title}"]
    for section in doc.sections:
        lines += ["", f"## {section.title}", ""]
        lines += [f"- {key}: {value}" for key, value in section.facts]
        if section.text:
            lines.append(section.text)
        if section.plot and section.plot[0] in plot_files:
            lines += ["", f"![{section.plot[0]}]({plot_files[section.plot[0]]})"]
        for caption, table in section.tables:
            lines += ["", *([f"{caption}:", ""] if caption else []), *_md_table(table)]
        if section.code:
            lines += ["```", *section.code, "```"]
    return "\n".join(lines) + "\n"


def _md_table(table: Table) -> list[str]:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [row(table.headers), "|" + "---|" * len(table.headers), *(row(r) for r in table.rows)]


def to_html(doc: Document) -> str:
    """One file with everything inline (styles and base64 PNGs); no scripts, no outside requests."""
    body = [f"<h1>{_e(doc.title)}</h1>"] + [_html_section(s) for s in doc.sections]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(doc.title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _html_section(section: Section) -> str:
    parts = [f"<h2>{_e(section.title)}</h2>"]
    if section.facts:
        parts.append("<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v.replace('`', ''))}</dd>"
                                      for k, v in section.facts) + "</dl>")
    if section.text:
        parts.append(f"<p>{_e(section.text)}</p>")
    if section.plot:
        stem, png = section.plot
        data = base64.b64encode(png).decode("ascii")
        parts.append(f'<img class="plot" alt="{_e(stem)} plot" src="data:image/png;base64,{data}">')
    tables = [_html_table(caption, table) for caption, table in section.tables]
    if section.collapsed and tables:
        tables = [f"<details><summary>show</summary>{''.join(tables)}</details>"]
    parts += tables
    if section.code:
        parts.append(f"<pre>{_e(chr(10).join(section.code))}</pre>")
    return "<section>" + "\n".join(parts) + "</section>"


def _html_table(caption: str, table: Table) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in table.headers)
    rows = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    cap = f"<caption>{_e(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _e(text: str) -> str:
    return html.escape(str(text))
