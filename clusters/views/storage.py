"""Storage volumes of a cluster, from its detail page: add an S3 (Mountpoint CSI) or FSx for Lustre volume, remove
one. Both start an operation; the detail page's storage table follows it through the team feed."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.requests import PortalRequest
from clusters import selectors, services
from clusters.api.serializers import VolumeCreateSerializer
from clusters.views.pages import render_detail_with_volume_errors
from portal.forms import SerializerForm
from portal.views import act, portal_view


@require_POST
@portal_view
def volume_create(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """Validate with ``VolumeCreateSerializer`` and call ``services.volume_create``; errors re-render the detail
    page with them next to the form's fields."""
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    form = SerializerForm(VolumeCreateSerializer, request.POST)
    created = form.submit(lambda **data: services.volume_create(actor=request.user, cluster=cluster,
                                                                source=request.source, **data))
    if created is None:
        return render_detail_with_volume_errors(request, cluster, form)
    volume, _ = created
    messages.success(request, f"Adding volume {volume.name} ({volume.get_kind_display()}).")
    return redirect("cluster-detail", cluster_id=cluster.pk)


@require_POST
@portal_view
def volume_delete(request: PortalRequest, cluster_id: int, volume_id: int) -> HttpResponse:
    """Remove a volume's PV/PVC (and the FSx file system InstantStart made; never a bucket)."""
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    volume = selectors.volume_get(actor=request.user, cluster=cluster, volume_id=volume_id)
    return act(request, lambda: services.volume_delete(actor=request.user, volume=volume, source=request.source),
               to=reverse("cluster-detail", args=[cluster.pk]), success=f"Removing volume {volume.name}.")
