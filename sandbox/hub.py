"""A small Hugging Face Hub: the model repositories the sandbox knows, served under ``/_hub`` on the AWS port
(``HF_ENDPOINT=<aws url>/_hub``) with the Hub's own answers (see ``cloud.huggingface``), and read by the download
Jobs the simulator runs (``sandbox.sim.downloads``).

Each repository has a branch ``main`` (and the tags listed), a commit, a gate and its files with realistic sizes.
Tokens: any ``hf_…`` token of at least 10 characters is known (``whoami``); a gated repository lets a known token
read its files unless the token contains ``noaccess`` (an account that has not accepted the terms).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

PREFIX = "/_hub"
GB = 1_000_000_000


@dataclass(frozen=True)
class Repo:
    repo_id: str
    files: tuple[tuple[str, int], ...]
    gated: str | bool = False
    tags: tuple[str, ...] = ()

    def commit(self, revision: str) -> str:
        return hashlib.sha1(f"{self.repo_id}@{revision}".encode()).hexdigest()

    def has(self, revision: str) -> bool:
        return revision in ("main", *self.tags) or revision in {self.commit("main"), *map(self.commit, self.tags)}


def _tokenizer(vocab: int = 7_031_673) -> tuple[tuple[str, int], ...]:
    return (("tokenizer.json", vocab), ("tokenizer_config.json", 7_306), ("generation_config.json", 242),
            ("config.json", 659), ("README.md", 4_917), (".gitattributes", 1_519))


def _shards(count: int, total: int, stem: str = "model") -> tuple[tuple[str, int], ...]:
    if count == 1:
        return ((f"{stem}.safetensors", total),)
    size = total // count
    return (*((f"{stem}-{index:05d}-of-{count:05d}.safetensors", size) for index in range(1, count + 1)),
            (f"{stem}.safetensors.index.json", 27_752))


REPOS = {repo.repo_id: repo for repo in (
    Repo("Qwen/Qwen2.5-0.5B-Instruct", (*_tokenizer(), ("merges.txt", 1_671_839), ("vocab.json", 2_776_833),
                                        *_shards(1, 988_097_824)), tags=("v1.0",)),
    Repo("Qwen/Qwen3-8B", (*_tokenizer(11_422_654), ("merges.txt", 1_671_853), ("vocab.json", 2_776_833),
                           *_shards(5, 16_381_470_720))),
    Repo("meta-llama/Llama-3.1-8B-Instruct", (*_tokenizer(9_085_657), *_shards(4, 16_060_522_496),
                                              ("original/consolidated.00.pth", 16_060_617_592)), gated="manual"),
    Repo("mistralai/Mistral-7B-Instruct-v0.3", (*_tokenizer(3_672_253), ("tokenizer.model", 587_404),
                                                *_shards(3, 14_496_047_104)), gated="auto"),
)}


def token_known(token: str | None) -> bool:
    return token is not None and token.startswith("hf_") and len(token) >= 10


def may_read(repo: Repo, token: str | None) -> bool:
    """Whether ``token`` may download ``repo``'s files."""
    return not repo.gated or (token_known(token) and "noaccess" not in (token or ""))


def _token(environ: dict[str, Any]) -> str | None:
    header = environ.get("HTTP_AUTHORIZATION", "")
    return header[7:] if header.startswith("Bearer ") else None


Response = tuple[int, dict[str, str], bytes]


def _json(status: int, body: Any, error_code: str = "") -> Response:
    headers = {"Content-Type": "application/json"}
    if error_code:
        headers["X-Error-Code"] = error_code
    return status, headers, json.dumps(body).encode()


def _error(status: int, code: str, message: str) -> Response:
    return _json(status, {"error": message}, code)


def _model(environ: dict[str, Any], path: str) -> Response:
    repo_path, _, revision = path.partition("/revision/")
    repo = REPOS.get(repo_path)
    if repo is None:
        return _error(401 if _token(environ) is None else 404, "RepoNotFound", "Repository Not Found")
    revision = revision or "main"
    if not repo.has(revision):
        return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
    return _json(200, {"id": repo.repo_id, "modelId": repo.repo_id, "sha": repo.commit(revision),
                       "gated": repo.gated, "private": False,
                       "siblings": [{"rfilename": name, "size": size} for name, size in repo.files]})


def _resolve(environ: dict[str, Any], path: str) -> Response:
    repo_path, _, rest = path.partition("/resolve/")
    repo = REPOS.get(repo_path)
    revision, _, filename = rest.partition("/")
    if repo is None:
        return _error(404, "RepoNotFound", "Repository Not Found")
    if not repo.has(revision):
        return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
    files = dict(repo.files)
    if filename not in files:
        return _error(404, "EntryNotFound", f"{filename} does not exist on {revision}")
    token = _token(environ)
    if not may_read(repo, token):
        message = (f"Access to model {repo.repo_id} is restricted. You must have access to it and be authenticated "
                   "to access it. Please log in.")
        return _error(403 if token_known(token) else 401, "GatedRepo", message)
    return 200, {"Content-Length": str(files[filename]), "X-Repo-Commit": repo.commit(revision)}, b""


def _whoami(environ: dict[str, Any]) -> Response:
    token = _token(environ)
    if not token_known(token):
        return _error(401, "", "Invalid credentials in Authorization header")
    return _json(200, {"type": "user", "name": "sandbox-user", "auth": {"type": "access_token"}})


def _answer(environ: dict[str, Any]) -> Response:
    path = unquote(environ.get("PATH_INFO", "")[len(PREFIX):])
    if path == "/api/whoami-v2":
        return _whoami(environ)
    if path.startswith("/api/models/"):
        return _model(environ, path[len("/api/models/"):])
    if "/resolve/" in path:
        return _resolve(environ, path.lstrip("/"))
    return _error(404, "", "Not Found")


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    status, headers, body = _answer(environ)
    reasons = {200: "OK", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"}
    headers = {"Content-Length": str(len(body)), **headers}
    start_response(f"{status} {reasons.get(status, 'Status')}", list(headers.items()))
    return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]
