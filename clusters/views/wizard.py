"""The create wizard: region → zone → instance type → count, capacity type (and training plan) and options → review.

Each step offers only what ``clusters.inspection`` returned for the choices before it: the region's zones, the
instance types offered in the chosen zone (with their GPU, EFA and memory facts), the HyperPod quotas of the chosen
type and the region's training plans for it. A step's choices are an htmx partial (``cluster_wizard_step``) loaded
when the step before it changes, which also empties the steps after it; without JavaScript the same page is
re-rendered by GET with every step whose predecessors are chosen. The count step shows what the instances cost by
the hour (``clusters.estimates``; refreshed as the count is typed, through ``costs``' estimate fragment), a training
plan its committed cost. The review validates with ``ClusterCreateSerializer`` (shape only) and states the cost;
the POST validates with it again and calls ``services.cluster_create``, whose preflight answers with field errors
shown next to their fields.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from rest_framework import serializers

from accounts import access
from accounts.models import Team
from accounts.requests import PortalRequest
from accounts.selectors import team_chosen, team_list
from cloud.aws import default_region
from clusters import actions, estimates, inspection, preflight, services
from clusters.api.serializers import ClusterCreateSerializer
from clusters.inspection.capacity import hyperpod_usage
from clusters.models import CapacityType
from config import plans
from config.api.exceptions import error_body
from config.converters import database_id
from config.errors import ApplicationError, InvalidFields
from portal.forms import SerializerForm, json_from_form
from portal.views import portal_view

#: The steps loaded as partials, in order; each one's partial empties the ones after it.
STEPS = ("zone", "type", "capacity", "review")
#: The step whose inputs show each field's errors (``None``: no input of its own; shown at the top).
FIELD_STEPS = {
    "name": "region", "region": "region", "zone": "zone", "instance_type": "type", "instance_count": "capacity",
    "capacity_type": "capacity", "training_plan_arn": "capacity", "fsx_capacity_gib": "capacity",
    "deep_health_checks": "capacity",
}
#: The wizard's own keys that are not answers (the no-JavaScript review button, the preview button).
WIZARD_KEYS = ("review", "preview")
AVAILABLE = "available"


def _team(request: PortalRequest, values: QueryDict) -> Team | None:
    team_id = database_id(values.get("team"))
    if team_id is not None:
        return team_chosen(actor=request.user, team_id=team_id)
    return request.team


def _may_create(request: PortalRequest, team: Team | None) -> bool:
    """Whether the user may create a cluster in ``team``, or (no team chosen yet) in any of their teams."""
    teams = [team] if team is not None else list(team_list(actor=request.user))
    return any(access.can(request.user, actions.CLUSTER_CREATE, candidate) for candidate in teams)


def _choices(values: QueryDict, upto: str) -> dict[str, Any]:
    """What inspection offers for every step up to ``upto`` whose predecessors hold a valid choice.

    Keys: ``regions``, ``zones``, ``offers``, ``offer`` (the chosen one), ``quotas`` and ``in_use`` (instances of
    the type HyperPod clusters of the region already hold against them), ``plans``, ``plan`` (the chosen one),
    ``estimate`` (the count's on-demand cost by the hour); ``reached``, the last step shown; ``step_errors``, the
    REST error body of a step whose choices AWS could not give."""
    found: dict[str, Any] = {"regions": inspection.regions(), "reached": "region", "step_errors": {}}
    region = values.get("region", "")
    if region not in found["regions"] or upto == "region":
        return found
    try:
        found["reached"] = "zone"
        found["zones"] = inspection.availability_zones(region)
        usable = {zone.name for zone in found["zones"] if zone.state == AVAILABLE}
        if values.get("zone") not in usable or upto == "zone":
            return found
        found["reached"] = "type"
        found["offers"] = inspection.instance_types(region, values.get("zone"))
        found["offer"] = next((offer for offer in found["offers"] if offer.name == values.get("instance_type")), None)
        if found["offer"] is None or upto == "type":
            return found
        found["reached"] = "capacity"
        name = found["offer"].name
        found["quotas"] = [quota for quota in inspection.quotas(region) if quota.instance_type == name]
        found["in_use"] = hyperpod_usage(region).get(name, 0)
        found["plans"] = [plan for plan in inspection.training_plans(region) if plan.instance_type == name]
        found["plan"] = next((plan for plan in found["plans"] if plan.arn == values.get("training_plan_arn")), None)
        found["estimate"] = estimates.capacity_estimate(region, name, _count(values))
    except ApplicationError as exc:
        found["step_errors"][found["reached"]] = error_body(exc)[0]
    return found


def _count(values: QueryDict) -> int:
    """The instance count answered so far (0 while it is not a whole number)."""
    raw = (values.get("instance_count") or "1").strip()
    return int(raw) if raw.isdigit() else 0


def _review(values: QueryDict) -> dict[str, Any]:
    """The answers checked by ``ClusterCreateSerializer`` as REST would: ``{"answers"}`` or ``{"error"}``."""
    body = {key: value for key, value in json_from_form(ClusterCreateSerializer(), values).items()
            if key not in WIZARD_KEYS and key != "csrfmiddlewaretoken"}
    serializer = ClusterCreateSerializer(data=body)
    try:
        serializer.is_valid(raise_exception=True)
    except serializers.ValidationError as exc:
        return {"error": error_body(exc)[0]}
    return {"answers": serializer.validated_data}


def _quota_overrun(answers: dict[str, Any]) -> list[dict[str, str]]:
    """The preflight's quota check on the reviewed answers (``[{"code", "message"}]``, empty when they fit), so the
    review says what Create would refuse."""
    failures = InvalidFields()
    preflight.check_quota(ClusterCreateSerializer.spec(answers), True, failures)
    return failures.fields.get("instance_count", [])


def _context(team: Team | None, values: QueryDict, *, upto: str, form: SerializerForm | None = None) -> dict:
    context: dict[str, Any] = {
        "section": "clusters", "team": team, "values": values, "default_region": default_region(),
        "capacity_types": CapacityType.choices, "form": form, "field_errors": {}, "other_errors": []}
    context |= _choices(values, upto)
    if upto == "review" and context["reached"] == "capacity" and not context["step_errors"]:
        review = _review(values)
        if "answers" in review:
            answers = review["answers"]
            review["quota"] = _quota_overrun(answers)
            review["cost"] = estimates.capacity_cost(answers["region"], answers["instance_type"],
                                                     answers["instance_count"], answers["capacity_type"])
        context |= {"review": review, "reached": "review"}
    context["shown_steps"] = STEPS[: STEPS.index(context["reached"]) + 1] if context["reached"] in STEPS else ()
    if form is not None and form.error:
        shown = {"region", *context["shown_steps"]}
        context["field_errors"] = form.field_errors
        context["other_errors"] = [item for name, items in form.field_errors.items()
                                   if FIELD_STEPS.get(name) not in shown for item in items]
    return context


@portal_view
def cluster_wizard(request: PortalRequest) -> HttpResponse:
    """GET: the wizard with every step whose predecessors are chosen (``?review=1`` adds the review), the region
    preset to the deployment's (``cloud.aws.default_region``) until one is chosen. POST: create
    the cluster and open its detail page, where the create operation's phases move live; errors re-render the
    wizard with each field's code next to it. POST with ``preview``: the same checks as a dry run
    (``config.plans.run``), and the wizard again with the plan under the review."""
    values: QueryDict = request.POST if request.method == "POST" else request.GET
    team = _team(request, values)
    if request.method != "POST" and not _may_create(request, team):
        role = str(getattr(access.least_role(actions.CLUSTER_CREATE), "label", "member")).lower()
        messages.error(request, f"Only team {role}s create clusters: ask one of your team's {role}s (its page on "
                                "Teams lists them) to create one, or to give you that role.")
        return redirect("clusters")
    if team is not None:
        access.require(request.user, actions.CLUSTER_CREATE, team)
    if request.method != "POST":
        if "region" not in values:
            values = values.copy()
            values.setlist("region", [default_region()])
        upto = "review" if values.get("review") else "capacity"
        return render(request, "clusters/wizard/page.html", _context(team, values, upto=upto))
    form = SerializerForm(ClusterCreateSerializer, request.POST, ignore=WIZARD_KEYS)

    def create(**data):
        team = team_chosen(actor=request.user, team_id=data.get("team"))
        return services.cluster_create(actor=request.user, team=team, spec=ClusterCreateSerializer.spec(data),
                                       source=request.source)

    if "preview" in request.POST:
        previewed = form.submit(lambda **data: plans.run(lambda: create(**data)))
        context = _context(team, values, upto="review" if previewed else "capacity", form=form)
        return render(request, "clusters/wizard/page.html", {**context, "preview": previewed[1] if previewed else None},
                      status=form.status if previewed is None else 200)
    created = form.submit(create)
    if created is None:
        return render(request, "clusters/wizard/page.html", _context(team, values, upto="capacity", form=form),
                      status=form.status)
    cluster, operation = created
    messages.success(request, f"Creating {cluster.name}: {operation.title} started.")
    return redirect("cluster-detail", cluster_id=cluster.pk)


@portal_view
def cluster_wizard_step(request: PortalRequest, step: str) -> HttpResponse:
    """One step's choices for the answers so far (query string), plus empty out-of-band copies of the later steps
    so a changed answer never leaves stale choices behind. Requires ``cluster.inspect`` on the team."""
    if step not in STEPS:
        raise Http404("No such wizard step.")
    team = _team(request, request.GET)
    access.require(request.user, actions.CLUSTER_INSPECT, team)
    context = _context(team, request.GET, upto=step)
    context["clear"] = STEPS[STEPS.index(step) + 1:]
    return render(request, f"clusters/wizard/_{step}.html", context)
