"""The Hugging Face Hub, read over its HTTP API (no client library): a model repository's files at a revision,
whether it is gated, and whether a token may read it.

The Hub's base URL is ``HF_ENDPOINT`` (the variable ``huggingface_hub`` itself reads; default
``https://huggingface.co``; ``make run`` points it at the sandbox's Hub). Answers, as the Hub gives them:

- ``GET /api/models/<repo>/revision/<revision>?blobs=true``: ``id``, ``sha`` (the commit), ``gated``
  (``false``, ``"auto"`` or ``"manual"``), ``siblings`` (``rfilename``, ``size``). An unknown repository is ``401``
  (anonymous) or ``404`` with ``X-Error-Code: RepoNotFound``; an unknown revision ``404`` ``RevisionNotFound``.
- ``HEAD /<repo>/resolve/<revision>/<file>``: a gated repository's files answer ``401`` without a token and
  ``403`` (``X-Error-Code: GatedRepo``) with one that has not been granted access.
- ``GET /api/whoami-v2``: ``401`` for a token the Hub does not know.

Each failure is an error in the vocabulary whose ``code`` the services map onto a field.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from urllib.parse import quote

import httpx

from config.errors import ApplicationError, CloudError

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT = 15.0
#: The Hub's rule for a repository id: ``name`` or ``owner/name``, each at most 96 letters, digits, ``-``, ``_`` and
#: ``.``, beginning and ending with a letter or digit; ``--`` and ``..`` nowhere.
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9])?"
_REPO_ID = re.compile(rf"(?:{_PART}/)?{_PART}")


class HubError(ApplicationError):
    """A refusal by the Hub; ``code`` is one of ``hub_repo_id_invalid`` (refused before asking),
    ``hub_repo_not_found``, ``hub_revision_not_found``, ``hub_gated``, ``hub_token_invalid``."""

    status = 400


class HubUnreachable(CloudError):
    code = "hub_unreachable"
    default_message = "The Hugging Face Hub did not answer."


@dataclass(frozen=True)
class HubFile:
    name: str
    size: int


@dataclass(frozen=True)
class HubModel:
    repo_id: str
    commit: str
    gated: bool
    files: tuple[HubFile, ...]

    def selected(self, allow: list[str], ignore: list[str]) -> list[HubFile]:
        """The files a download with these allow/ignore glob patterns fetches (``hf download --include/--exclude``
        semantics: no allow pattern means every file)."""
        return [file for file in self.files
                if (not allow or any(fnmatch.fnmatch(file.name, pattern) for pattern in allow))
                and not any(fnmatch.fnmatch(file.name, pattern) for pattern in ignore)]


def endpoint() -> str:
    """The Hub's base URL (``HF_ENDPOINT``, read on every call)."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _request(method: str, path: str, token: str | None) -> httpx.Response:
    try:
        return httpx.request(method, f"{endpoint()}{path}", headers=_headers(token), timeout=TIMEOUT)
    except httpx.HTTPError as error:
        raise HubUnreachable(f"The Hugging Face Hub at {endpoint()} did not answer: {error}") from None


def _unexpected(response: httpx.Response) -> HubUnreachable:
    return HubUnreachable(f"The Hugging Face Hub answered {response.status_code}: {response.text[:200]}")


def model(repo_id: str, revision: str, token: str | None = None) -> HubModel:
    """The repository's files at ``revision`` (branch, tag or commit)."""
    if not _REPO_ID.fullmatch(repo_id) or "--" in repo_id or ".." in repo_id:
        raise HubError(f"{repo_id!r} is not a Hugging Face repository id: owner/name, each of letters, digits, '-', "
                       "'_' and '.'.", code="hub_repo_id_invalid")
    response = _request("GET", f"/api/models/{quote(repo_id)}/revision/{quote(revision, safe='')}?blobs=true", token)
    code = response.headers.get("X-Error-Code", "")
    if code == "RevisionNotFound":
        raise HubError(f"{repo_id} has no revision {revision}.", code="hub_revision_not_found")
    if code == "RepoNotFound" or response.status_code in (401, 404):
        raise HubError(f"No model repository {repo_id} on the Hugging Face Hub (or it is private).",
                       code="hub_repo_not_found")
    if response.status_code != 200:
        raise _unexpected(response)
    body = response.json()
    files = tuple(HubFile(entry["rfilename"], int(entry.get("size") or 0)) for entry in body.get("siblings") or [])
    return HubModel(repo_id=body.get("id", repo_id), commit=body.get("sha", ""), gated=bool(body.get("gated")),
                    files=files)


def check_token(token: str) -> None:
    """``hub_token_invalid`` when the Hub does not know ``token``."""
    response = _request("GET", "/api/whoami-v2", token)
    if response.status_code == 401:
        raise HubError("The Hugging Face Hub does not accept this token.", code="hub_token_invalid")
    if response.status_code != 200:
        raise _unexpected(response)


def check_access(found: HubModel, revision: str, token: str | None) -> None:
    """``hub_gated`` when ``found`` is gated and ``token`` (or no token) may not read its files."""
    if not found.gated or not found.files:
        return
    path = f"/{quote(found.repo_id)}/resolve/{quote(revision, safe='')}/{quote(found.files[0].name)}"
    response = _request("HEAD", path, token)
    if response.status_code in (401, 403):
        why = "needs a Hugging Face token" if not token else "has not granted this token access"
        raise HubError(f"{found.repo_id} is a gated model and {why}; accept its terms on the Hub and give a "
                       "token of that account.", code="hub_gated")
    if response.status_code not in (200, 302):
        raise _unexpected(response)
