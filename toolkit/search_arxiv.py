"""arXiv search (the `arxiv` package) and paper reading, cached on disk, polite, never raising."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from toolkit.netutil import DiskCache, GiveUp, RetryPolicy, Spacing, timeout_adapter, with_retries
from toolkit.pdftext import extract_text

log = logging.getLogger(__name__)

PDF_URL = "https://arxiv.org/pdf/{id}"
_NEW_ID = re.compile(r"\d{4}\.\d{4,5}(v\d+)?")
_OLD_ID = re.compile(r"[a-z][a-z.-]*(\.[A-Z]{2})?/\d{7}(v\d+)?")
_TRANSIENT_STATUS = {429, 500, 502, 503, 504}
_ABSTRACT_CHARS = 700
# The whole paper's text (to this size) is saved beside the PDF; the model sees the first max_chars.
_SAVED_TEXT_CHARS = 2_000_000
# arXiv asks API clients for no more than one request every three seconds.
_SPACING = Spacing(3.0)


def normalize_id(text: str) -> str | None:
    """'arXiv:1706.03762v5', 'https://arxiv.org/abs/1706.03762' or '1706.03762' -> '1706.03762v5'/..."""
    s = text.strip()
    s = re.sub(r"^(?:https?://)?(?:export\.)?arxiv\.org/(?:abs|pdf)/", "", s, flags=re.I)
    s = re.sub(r"^arxiv:", "", s, flags=re.I)
    s = re.sub(r"\.pdf$", "", s)
    return s if _NEW_ID.fullmatch(s) or _OLD_ID.fullmatch(s) else None


def _classify(err: Exception) -> float | None:
    import arxiv
    import requests

    if isinstance(err, arxiv.HTTPError) and err.status in _TRANSIENT_STATUS:
        return 0.0
    if isinstance(err, _HttpStatus) and err.status in _TRANSIENT_STATUS:
        return err.retry_after or 0.0
    if isinstance(err, (requests.ConnectionError, requests.Timeout)):
        return 0.0
    return None


class _HttpStatus(Exception):
    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def _retry_after(headers: Any) -> float | None:
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None


class ArxivTools:
    def __init__(
        self,
        cache_dir: Path,
        papers_dir: Path,
        *,
        policy: RetryPolicy | None = None,
        spacing: Spacing | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.cache = DiskCache(cache_dir / "arxiv")
        self.papers_dir = papers_dir
        self.policy = policy or RetryPolicy()
        self.spacing = spacing or _SPACING
        self.timeout_s = timeout_s

    def _client(self, page_size: int) -> Any:
        import arxiv

        # Retries are ours (with backoff); the client's own are immediate.
        client = arxiv.Client(page_size=page_size, delay_seconds=0.0, num_retries=0)
        session = getattr(client, "_session", None)
        if session is not None:  # the arxiv client sets no timeout; a hung socket must not hang a run
            session.mount("https://", timeout_adapter(self.timeout_s))
            session.mount("http://", timeout_adapter(self.timeout_s))
        return client

    def search(self, query: str, max_results: int) -> str:
        import arxiv

        max_results = max(1, min(max_results, 50))
        key = ["search", query, max_results]
        cached = self.cache.get(key)
        if cached is None:
            search = arxiv.Search(query=query, max_results=max_results)

            def fetch() -> list[dict[str, Any]]:
                self.spacing.wait()
                return [_summary(r) for r in self._client(max_results).results(search)]

            try:
                cached = with_retries(fetch, _classify, self.policy, "arXiv")
            except GiveUp as err:
                return f"arXiv search failed: {err.message}. No cached answer for this query."
            except Exception as err:  # a tool result, never an exception that ends a run
                log.warning("arXiv search failed: %r", err)
                return f"arXiv search failed: {type(err).__name__}: {err}"
            self.cache.put(key, cached)
        return _render(query, cached)

    def read_paper(self, paper_id: str, max_chars: int) -> str:
        pid = normalize_id(paper_id)
        if pid is None:
            return f"'{paper_id}' is not an arXiv id (expected e.g. 1706.03762 or hep-th/9901001)."
        stem = pid.replace("/", "_")
        pdf = self.papers_dir / f"{stem}.pdf"
        if not pdf.is_file():
            try:
                with_retries(lambda: self._download(pid, pdf), _classify, self.policy, "arXiv")
            except GiveUp as err:
                return f"Could not download arXiv:{pid}: {err.message}."
            except Exception as err:
                log.warning("arXiv download failed: %r", err)
                return f"Could not download arXiv:{pid}: {type(err).__name__}: {err}"
        try:
            extracted = extract_text(pdf, _SAVED_TEXT_CHARS)
        except Exception as err:
            return f"Downloaded papers/{pdf.name} but could not read its text ({type(err).__name__})."
        txt = pdf.with_suffix(".txt")
        txt.write_text(extracted.text, encoding="utf-8")
        text = extracted.text[:max_chars]
        pages = (
            f"first {extracted.pages_read} of {extracted.total_pages} pages"
            if extracted.pages_read is not None
            else f"{extracted.total_pages or '?'} pages"
        )
        header = f"arXiv:{pid} · PDF saved at papers/{pdf.name} · {pages} · text via {extracted.method}"
        if len(extracted.text) > max_chars:
            header += f"\n[showing the first {max_chars:,} of {len(extracted.text):,} characters extracted; "
            header += f"the extracted text is in papers/{txt.name}]"
        return header + "\n\n" + (text or "(no text could be extracted)")

    def _download(self, pid: str, target: Path) -> None:
        import requests

        self.spacing.wait()
        with requests.Session() as session:
            session.mount("https://", timeout_adapter(self.timeout_s))
            session.headers["User-Agent"] = "research-crew (arxiv paper reader)"
            resp = session.get(PDF_URL.format(id=pid), stream=True)
            with resp:
                if resp.status_code != 200:
                    if resp.status_code in _TRANSIENT_STATUS:
                        raise _HttpStatus(resp.status_code, _retry_after(resp.headers))
                    raise RuntimeError(f"HTTP {resp.status_code} for {resp.url}")
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_suffix(".part")
                with open(tmp, "wb") as out:
                    for chunk in resp.iter_content(1 << 16):
                        out.write(chunk)
        with open(tmp, "rb") as handle:
            if handle.read(5) != b"%PDF-":
                tmp.unlink()
                raise RuntimeError("the server did not return a PDF")
        os.replace(tmp, target)


def _summary(result: Any) -> dict[str, Any]:
    return {
        "id": result.get_short_id(),
        "title": " ".join(result.title.split()),
        "authors": [a.name for a in result.authors],
        "published": result.published.date().isoformat() if result.published else "",
        "abstract": " ".join(result.summary.split()),
        "pdf": result.pdf_url or PDF_URL.format(id=result.get_short_id()),
    }


def _render(query: str, results: list[dict[str, Any]]) -> str:
    if not results:
        return f"arXiv: no results for {query!r}."
    lines = [f"arXiv: {len(results)} result(s) for {query!r} (abstracts cut at {_ABSTRACT_CHARS} chars)"]
    for i, r in enumerate(results, 1):
        authors = ", ".join(r["authors"][:4]) + (" et al." if len(r["authors"]) > 4 else "")
        abstract = r["abstract"]
        if len(abstract) > _ABSTRACT_CHARS:
            abstract = abstract[:_ABSTRACT_CHARS] + " [...]"
        lines += [
            f"\n{i}. [{r['id']}] {r['title']}",
            f"   {authors} · {r['published']} · {r['pdf']}",
            f"   {abstract}",
        ]
    return "\n".join(lines)
