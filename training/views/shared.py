"""The shared-bucket browser of the submit form: one folder of the team's part of the cluster region's shared bucket
(``training.shared_files.listing``, the same listing as ``GET /api/v1/clusters/<id>/shared-files``), rendered as an
htmx partial. A folder link re-loads the partial one level down; a file (or "Use this folder") fills the input named
by ``?target=`` (``static/js/training-submit.js``). **Upload** asks :func:`shared_upload` for a presigned POST per
file (``training.services.shared_file_upload``, as REST does) and the browser sends the file straight to S3; a file
larger than one part (``part_bytes``) goes as a multipart upload through the REST operations
(``…/shared-files/multipart-uploads``, with the session's CSRF token).
"""

from __future__ import annotations

import posixpath
import re

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render

from accounts import access
from accounts.requests import PortalRequest
from config.errors import ApplicationError
from governance import selectors as governance
from portal.views import perform, portal_view
from training import actions, services, shared_files
from training.recipes import SHARED_MOUNT

_TARGET = re.compile(r"^[a-z][a-z0-9_-]{0,80}$")


@portal_view
def shared_browser(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """``?path=`` (a folder under the mount, or relative to it) and ``?target=`` (the input to fill). On another
    team's cluster shared through a compute quota, the folder is of the prefix of the team the job would run as (its
    ``shared`` claim there), and so is an upload's (:func:`shared_upload`)."""
    cluster = governance.workload_cluster_get(actor=request.user, cluster_id=cluster_id, field=None)
    team = governance.working_team(request.user, cluster)
    access.require(request.user, actions.VIEW, team)
    target = request.GET.get("target", "")
    target = target if _TARGET.match(target) else ""
    listing, error = None, None
    try:
        listing = shared_files.listing(cluster, request.GET.get("path", ""), team=team)
    except ApplicationError as exc:
        error = exc.as_dict()
    parent = None
    if listing and listing["path"] != SHARED_MOUNT:
        parent = posixpath.dirname(listing["path"])
    return render(request, "training/jobs/_shared_browser.html",
                  {"cluster": cluster, "listing": listing, "error": error, "target": target, "parent": parent,
                   "mount": SHARED_MOUNT, "can_upload": access.can(request.user, actions.UPLOAD, team),
                   "part_bytes": shared_files.PART_BYTES},
                  status=400 if error else 200)


@portal_view
def shared_upload(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """``POST path=``: the presigned upload of that file as JSON (200), or the error body (400)."""
    cluster = governance.workload_cluster_get(actor=request.user, cluster_id=cluster_id, field=None)
    origin = shared_files.page_origin(request.headers.get("Origin"), f"{request.scheme}://{request.get_host()}")
    upload, error = perform(lambda: services.shared_file_upload(actor=request.user, cluster=cluster,
                                                                 path=request.POST.get("path", ""), source="portal",
                                                                 page_origin=origin))
    return JsonResponse(error or upload, status=400 if error else 200)
