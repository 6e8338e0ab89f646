"""A local stand-in for huggingface.co, so the real huggingface_hub client runs against it (HF_ENDPOINT).

It serves the repositories of tests/fixtures/hub/repos.json with the response shapes and error headers of
tests/fixtures/hub/*.json: repository info (with file sizes), the access check of gated repositories, tree
listings and file downloads (LFS files through a redirect, as the hub does). It is strict: a request for a
route the hub does not have is answered 404 and recorded in `unexpected`, which tests check is empty.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hub"
LFS_SUFFIXES = (".safetensors", ".parquet", ".bin", ".model")
REPO = r"(?P<repo>[^/]+/[^/]+)"
ROUTES = [
    ("info", re.compile(rf"^/api/(?P<kind>models|datasets)/{REPO}(?:/revision/(?P<rev>[^/]+))?$")),
    ("auth", re.compile(rf"^/api/(?P<kind>models|datasets)/{REPO}/auth-check$")),
    ("tree", re.compile(rf"^/api/(?P<kind>models|datasets)/{REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.+))?$")),
    ("resolve", re.compile(rf"^/(?P<prefix>datasets/)?{REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")),
    ("cdn", re.compile(r"^/cdn/(?P<sha256>[0-9a-f]{64})$")),
    ("harnesses", re.compile(r"^/api/agent-harnesses$")),
]


@dataclass
class RepoFile:
    path: str
    size: int
    data: bytes | None  # None: listed, never served

    @property
    def blob_id(self) -> str:  # git's blob id, as the hub reports it
        header = f"blob {self.size}\0".encode()
        return hashlib.sha1(header + (self.data if self.data is not None else self.path.encode())).hexdigest()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data if self.data is not None else self.path.encode()).hexdigest()

    @property
    def is_lfs(self) -> bool:
        return self.path.endswith(LFS_SUFFIXES)

    def sibling(self) -> dict:
        entry = {"rfilename": self.path, "blobId": self.blob_id, "size": self.size}
        if self.is_lfs:
            entry["lfs"] = {"sha256": self.sha256, "size": self.size, "pointerSize": 134}
        return entry

    def tree_entry(self) -> dict:
        entry = {"type": "file", "oid": self.blob_id, "size": self.size, "path": self.path}
        if self.is_lfs:
            entry["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": 134}
        return entry


@dataclass
class FakeHub:
    """Start with `content` (fixture content name -> folder); `url` is then the HF_ENDPOINT to use."""

    content: dict[str, Path]
    granted_token: str = "hf_test_granted"
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.repos: dict[str, dict] = {"models": {}, "datasets": {}}
        for name in ("repos.json", "mlrb_repos.json"):
            for kind, repos in json.loads((FIXTURES / name).read_text()).items():
                if kind in self.repos:
                    self.repos[kind].update(repos)
        self.errors = json.loads((FIXTURES / "errors.json").read_text())
        self.templates = {kind: json.loads((FIXTURES / f"{kind[:-1]}_info.json").read_text())
                          for kind in ("models", "datasets")}
        self.blobs: dict[str, RepoFile] = {}
        # The hub and its CDN: another origin, as on huggingface.co, so the client neither follows a file's
        # redirect in its metadata request nor sends its token there.
        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), _handler(self)) for _ in range(2)]
        self.url, self.cdn_url = (f"http://127.0.0.1:{server.server_address[1]}" for server in self.servers)
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()

    # -- the repositories ---------------------------------------------------------------------------

    def files(self, revision: dict) -> list[RepoFile]:
        if "content" in revision:
            root = self.content[revision["content"]]
            found = [RepoFile(str(p.relative_to(root)), p.stat().st_size, p.read_bytes())
                     for p in sorted(root.rglob("*")) if p.is_file()]
        else:
            found = [RepoFile(name, size, None) for name, size in revision["files"].items()]
        for file in found:
            if file.is_lfs and file.data is not None:
                self.blobs[file.sha256] = file
        return found

    def revision(self, repo: dict, rev: str) -> tuple[str, dict] | None:
        for name, body in repo["revisions"].items():
            if rev in (name, body["sha"]):
                return name, body
        return None


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # the test reads hub.requests instead
            pass

        def do_GET(self) -> None:
            self._route(head=False)

        def do_HEAD(self) -> None:
            self._route(head=True)

        def _route(self, head: bool) -> None:
            path = urlsplit(self.path).path
            for name, pattern in ROUTES:
                match = pattern.match(path)
                if match and not (head and name not in ("resolve", "cdn")):
                    groups = {k: unquote(v) if v else v for k, v in match.groupdict().items()}
                    getattr(self, f"_{name}")(head=head, **groups)
                    return
            hub.unexpected.append(f"{'HEAD' if head else 'GET'} {self.path}")
            self._send(404, {"error": "Sorry, we can't find the page you are looking for."}, head=head)

        # -- routes ---------------------------------------------------------------------------------

        def _info(self, kind: str, repo: str, rev: str | None, head: bool) -> None:
            found = self._repo(kind, repo, rev or "main", head)
            if found is None:
                return
            meta, name, body = found
            files = hub.files(body)
            info = copy.deepcopy(hub.templates[kind])
            info.pop("_comment", None)
            info.update(id=repo, author=repo.split("/")[0], sha=body["sha"], createdAt=meta["createdAt"],
                        lastModified=meta["createdAt"], gated=meta["gated"],
                        siblings=[f.sibling() for f in files], usedStorage=sum(f.size for f in files))
            if kind == "models":
                info["modelId"] = repo
                weights = sum(f.size for f in files if f.path.endswith(".safetensors"))
                info["safetensors"] = {"parameters": {"BF16": weights // 2}, "total": weights // 2}
            self._send(200, info, head=head)

        def _auth(self, kind: str, repo: str, head: bool) -> None:
            found = self._repo(kind, repo, "main", head, check_gate=True)
            if found is not None:
                self._send(200, {}, head=head)

        def _tree(self, kind: str, repo: str, rev: str, path: str | None, head: bool) -> None:
            found = self._repo(kind, repo, rev, head, check_gate=True)
            if found is None:
                return
            if self._query("recursive") not in ("True", "true", "1"):
                hub.unexpected.append(f"tree listing without recursive=True: {self.path}")
            files = [f for f in hub.files(found[2]) if not path or f.path.startswith(path.rstrip("/") + "/")]
            folders = sorted({"/".join(f.path.split("/")[:i]) for f in files for i in range(1, f.path.count("/") + 1)})
            entries = [{"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
                       for d in folders] + [f.tree_entry() for f in files]
            self._send(200, entries, head=head)

        def _resolve(self, prefix: str | None, repo: str, rev: str, path: str, head: bool) -> None:
            found = self._repo("datasets" if prefix else "models", repo, rev, head, check_gate=True)
            if found is None:
                return
            files = {f.path: f for f in hub.files(found[2])}
            file = files.get(path)
            if file is None or file.data is None:
                self._error("EntryNotFound", head=head)
                return
            common = {"X-Repo-Commit": found[2]["sha"], "Accept-Ranges": "bytes"}
            if file.is_lfs:  # the hub answers LFS files with a redirect to its CDN
                self._raw(302, b"", head, {**common, "Location": f"{hub.cdn_url}/cdn/{file.sha256}",
                                           "X-Linked-Etag": f'"{file.sha256}"', "X-Linked-Size": str(file.size)})
                return
            self._raw(200, file.data, head, {**common, "ETag": f'"{file.blob_id}"'})

        def _harnesses(self, head: bool) -> None:
            registry = json.loads((FIXTURES / "agent_harnesses.json").read_text())
            registry.pop("_comment")
            self._send(200, registry, head=head)

        def _cdn(self, sha256: str, head: bool) -> None:
            if self.headers.get("Authorization"):
                hub.unexpected.append("a token was sent to the CDN")
            file = hub.blobs.get(sha256)
            if file is None:
                hub.unexpected.append(f"cdn blob never announced: {sha256}")
                self._raw(404, b"", head, {})
                return
            self._raw(200, file.data, head, {"ETag": f'"{sha256}"'})

        # -- helpers --------------------------------------------------------------------------------

        def _repo(self, kind: str, repo: str, rev: str, head: bool, check_gate: bool = False):
            meta = hub.repos[kind].get(repo)
            if meta is None:
                self._error("RepoNotFound", head=head)
                return None
            if check_gate and meta["gated"] and self.headers.get("Authorization") != f"Bearer {hub.granted_token}":
                self._error("GatedRepo", head=head, kind=kind[:-1], repo=repo)
                return None
            resolved = hub.revision(meta, rev)
            if resolved is None:
                self._error("RevisionNotFound", head=head, revision=rev)
                return None
            return meta, *resolved

        def _query(self, key: str) -> str | None:
            for part in urlsplit(self.path).query.split("&"):
                name, _, value = part.partition("=")
                if name == key:
                    return value
            return None

        def _error(self, code: str, head: bool, **fill: str) -> None:
            spec = hub.errors[code]
            headers = {k: v.format(**fill) for k, v in spec["headers"].items()}
            body = {k: v.format(**fill) for k, v in spec["body"].items()}
            self._raw(spec["status"], json.dumps(body).encode(), head, {**headers, "Content-Type": "application/json"})

        def _send(self, status: int, obj, head: bool) -> None:
            self._raw(status, json.dumps(obj).encode(), head, {"Content-Type": "application/json"})

        def _raw(self, status: int, data: bytes, head: bool, headers: dict[str, str]) -> None:
            hub.requests.append(("HEAD" if head else "GET", self.path, status))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not head:
                self.wfile.write(data)

    return Handler


def point_client_at(hub: FakeHub, monkeypatch) -> None:
    """Point this process's huggingface_hub (already imported, offline for the test session) at `hub`."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
