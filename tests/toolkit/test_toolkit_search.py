"""arXiv and GitHub tools against recorded HTTP responses (real clients; only the socket is replaced)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import requests

from toolkit import Toolkit
from toolkit.netutil import RetryPolicy, Spacing
from toolkit.search_arxiv import ArxivTools, normalize_id
from toolkit.search_github import GithubTools

ARXIV_API = "export.arxiv.org/api/query"
GH = "api.github.com"


@pytest.fixture
def tk(tmp_path: Path, sleeps) -> Toolkit:
    _, sleep = sleeps
    policy = RetryPolicy(attempts=4, base_s=2.0, max_total_wait_s=60.0, sleep=sleep)
    run = tmp_path / "run"
    return Toolkit(
        run,
        arxiv=ArxivTools(run / "cache", run / "papers", policy=policy, spacing=Spacing(0.0)),
        github=GithubTools(run / "cache", token="", policy=policy, seconds_between_requests=0),
    )


# -- arXiv ---------------------------------------------------------------------------------------


def test_arxiv_search_renders_results_and_caches_them(tk: Toolkit, recorded_http) -> None:
    recorded_http.file(ARXIV_API, "arxiv_search.xml")
    text = tk.search_arxiv("attention", max_results=2)
    assert "[1706.03762v7] Attention Is All You Need" in text
    assert "Ashish Vaswani, Noam Shazeer, Niki Parmar, Jakob Uszkoreit et al." in text
    assert "2017-06-12" in text and "https://arxiv.org/pdf/1706.03762v7" in text
    assert "the Transformer" in text and "[2106.09685v2] LoRA" in text
    assert "search_query=attention" in recorded_http.requests[0].url
    assert tk.search_arxiv("attention", max_results=2) == text
    assert recorded_http.hits(ARXIV_API) == 1  # the second answer came from the disk cache


def test_arxiv_empty_result_is_plain(tk: Toolkit, recorded_http) -> None:
    recorded_http.file(ARXIV_API, "arxiv_empty.xml")
    assert "no results" in tk.search_arxiv("zzqqxxnotaword", max_results=5)


def test_arxiv_backs_off_on_rate_limit_then_succeeds(tk: Toolkit, recorded_http, sleeps) -> None:
    waits, _ = sleeps
    body = recorded_http.fixture("arxiv_search.xml")
    recorded_http.add(ARXIV_API, recorded_http.canned(429), recorded_http.canned(503), recorded_http.canned(200, body))
    text = tk.search_arxiv("attention", max_results=2)
    assert "Attention Is All You Need" in text
    assert waits == [2.0, 4.0]  # exponential backoff between the three tries


def test_arxiv_persistent_failure_and_network_errors_are_clear_results(tk: Toolkit, recorded_http) -> None:
    recorded_http.add(ARXIV_API, recorded_http.canned(503))
    text = tk.search_arxiv("attention")
    assert text.startswith("arXiv search failed") and "try again" in text
    recorded_http.routes.clear()
    recorded_http.add(ARXIV_API, recorded_http.canned(error=requests.ConnectionError("Name or service not known")))
    text = tk.search_arxiv("attention")
    assert "arXiv search failed" in text and "ConnectionError" in text


def test_read_arxiv_paper_downloads_into_papers_and_returns_text(tk: Toolkit, recorded_http) -> None:
    recorded_http.file("arxiv.org/pdf/1706.03762", "paper.pdf")
    text = tk.read_arxiv_paper("arXiv:1706.03762")
    pdf = tk.papers_dir / "1706.03762.pdf"  # the crew's folder, shown read-only at workspace/papers
    assert pdf.is_file() and pdf.read_bytes().startswith(b"%PDF-")
    assert "Attention Is All You Need" in text and "Recurrent neural networks" in text
    assert "papers/1706.03762.pdf" in text and str(tk.run_dir) not in text and pdf.with_suffix(".txt").is_file()
    tk.read_arxiv_paper("https://arxiv.org/abs/1706.03762")
    assert recorded_http.hits("arxiv.org/pdf/") == 1  # the PDF on disk is the cache
    assert "1706.03762.pdf" in tk.list_files("papers")


def test_read_arxiv_paper_cuts_long_text(tk: Toolkit, recorded_http) -> None:
    recorded_http.file("arxiv.org/pdf/1706.03762", "paper.pdf")
    text = tk.arxiv.read_paper("1706.03762", max_chars=40)
    assert "showing the first 40" in text


def test_read_arxiv_paper_failures_are_messages(tk: Toolkit, recorded_http) -> None:
    assert "not an arXiv id" in tk.read_arxiv_paper("../../etc/passwd")
    recorded_http.add("arxiv.org/pdf/", recorded_http.canned(200, b"<html>captcha</html>"))
    assert "did not return a PDF" in tk.read_arxiv_paper("2106.09685")
    assert not (tk.papers_dir / "2106.09685.pdf").exists()


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("1706.03762", "1706.03762"),
        ("arXiv:1706.03762v5", "1706.03762v5"),
        ("https://arxiv.org/pdf/2106.09685v2.pdf", "2106.09685v2"),
        ("hep-th/9901001", "hep-th/9901001"),
        ("not an id", None),
        ("1706.03762; rm -rf /", None),
    ],
)
def test_normalize_arxiv_id(raw: str, expected: str | None) -> None:
    assert normalize_id(raw) == expected


# -- GitHub --------------------------------------------------------------------------------------


def test_github_repository_search(tk: Toolkit, recorded_http) -> None:
    recorded_http.file(f"{GH}/search/repositories", "github_search_repos.json")
    text = tk.search_github("nanogpt language:python", max_results=2)
    assert "showing 2 of 1,342" in text
    assert "karpathy/nanoGPT · ★38,911 · Python · updated 2025-01-09" in text
    assert "EleutherAI/nanoGPT-mup" in text and "(no description)" in text
    assert "q=nanogpt+language%3Apython" in recorded_http.requests[0].url
    assert "Authorization" not in recorded_http.requests[0].headers  # no token: anonymous
    tk.search_github("nanogpt language:python", max_results=2)
    assert recorded_http.hits(GH) == 1


def test_github_code_search_needs_a_token_and_works_with_one(tmp_path: Path, recorded_http) -> None:
    no_token = GithubTools(tmp_path / "c1", token="", seconds_between_requests=0)
    assert "needs a GITHUB_TOKEN" in no_token.search("def forward", "code", 5)
    recorded_http.file(f"{GH}/search/code", "github_search_code.json")
    with_token = GithubTools(tmp_path / "c2", token="ghp_test", seconds_between_requests=0)
    text = with_token.search("def forward repo:karpathy/nanoGPT", "code", 5)
    assert "karpathy/nanoGPT: model.py" in text and "showing 1 of 7" in text
    assert recorded_http.requests[-1].headers["Authorization"] == "token ghp_test"
    assert "kind must be one of" in with_token.search("x", "issues", 5)


def test_read_github_file_and_folder(tk: Toolkit, recorded_http) -> None:
    recorded_http.file(f"{GH}/repos/karpathy/nanoGPT/contents/README.md", "github_contents_readme.json")
    recorded_http.file(f"{GH}/repos/karpathy/nanoGPT/contents/config", "github_contents_folder.json")
    text = tk.read_github_file("karpathy/nanoGPT", "README.md")
    assert text.startswith("karpathy/nanoGPT:README.md (") and "# nanoGPT" in text and "pip install torch" in text
    assert recorded_http.hits(GH) == 1  # lazy repository: only the contents request
    folder = tk.read_github_file("karpathy/nanoGPT", "config", ref="master")
    assert "folder with 2 entries" in folder and "config/train_gpt2.py" in folder
    assert "ref=master" in recorded_http.requests[-1].url
    assert "owner/name" in tk.read_github_file("nanoGPT", "README.md")


def test_github_not_found_is_a_message(tk: Toolkit, recorded_http) -> None:
    recorded_http.file(f"{GH}/repos/karpathy/nanoGPT/contents/nope.py", "github_not_found.json", status=404)
    assert "not found (404)" in tk.read_github_file("karpathy/nanoGPT", "nope.py")


def test_github_short_rate_limit_waits_then_retries(tk: Toolkit, recorded_http, sleeps) -> None:
    waits, _ = sleeps
    limited = recorded_http.canned(
        403,
        recorded_http.fixture("github_rate_limited.json"),
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 5)},
    )
    ok = recorded_http.canned(
        200, recorded_http.fixture("github_search_repos.json"), {"Content-Type": "application/json"}
    )
    recorded_http.add(f"{GH}/search/repositories", limited, ok)
    text = tk.search_github("nanogpt")
    assert "karpathy/nanoGPT" in text
    assert len(waits) == 1 and 1.0 <= waits[0] <= 6.0


def test_github_long_rate_limit_is_a_clear_message_without_waiting(tk: Toolkit, recorded_http, sleeps) -> None:
    waits, _ = sleeps
    reset = int(time.time()) + 1800
    recorded_http.add(
        f"{GH}/search/repositories",
        recorded_http.canned(
            403,
            recorded_http.fixture("github_rate_limited.json"),
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        ),
    )
    text = tk.search_github("nanogpt")
    assert "rate-limiting" in text and "retry in about" in text
    assert waits == []


def test_github_secondary_rate_limit_uses_retry_after(tk: Toolkit, recorded_http, sleeps) -> None:
    waits, _ = sleeps
    body = b'{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}'
    ok = recorded_http.canned(200, recorded_http.fixture("github_search_repos.json"))
    recorded_http.add(f"{GH}/search/repositories", recorded_http.canned(403, body, {"retry-after": "3"}), ok)
    assert "karpathy/nanoGPT" in tk.search_github("nanogpt")
    assert waits == [3.0]


def test_github_network_failure_is_a_message(tk: Toolkit, recorded_http) -> None:
    recorded_http.add(GH, recorded_http.canned(error=requests.ConnectionError("Network is unreachable")))
    text = tk.search_github("nanogpt")
    assert text.startswith("GitHub repositories search failed") and "ConnectionError" in text


# -- live (opt-in) -------------------------------------------------------------------------------


@pytest.mark.network
def test_live_arxiv(tmp_path: Path) -> None:
    tk = Toolkit(tmp_path / "run")
    text = tk.search_arxiv('ti:"Attention Is All You Need"', max_results=3)
    assert "1706.03762" in text, text
    paper = tk.read_arxiv_paper("1706.03762")
    assert "attention" in paper.lower(), paper[:500]


@pytest.mark.network
def test_live_github(tmp_path: Path) -> None:
    tk = Toolkit(tmp_path / "run")
    text = tk.search_github("nanoGPT user:karpathy", max_results=3)
    assert "karpathy/nanoGPT" in text, text
    readme = tk.read_github_file("karpathy/nanoGPT", "README.md")
    assert "nanoGPT" in readme, readme[:500]
