"""Portal routes of the governance app: a cluster's Governance page and tab panel, its forms."""

from django.urls import path

from governance.views import governance

urlpatterns = [
    path("clusters/<id:cluster_id>/governance/", governance.governance_page, name="cluster-governance"),
    path("clusters/<id:cluster_id>/governance/panel/", governance.governance_panel, name="cluster-governance-panel"),
    path("clusters/<id:cluster_id>/governance/scheduler-config", governance.scheduler_config_set,
         name="cluster-scheduler-config-set"),
    path("clusters/<id:cluster_id>/governance/scheduler-config/delete", governance.scheduler_config_delete,
         name="cluster-scheduler-config-delete"),
    path("clusters/<id:cluster_id>/governance/quotas", governance.quota_create, name="cluster-quota-create"),
    path("compute-quotas/<id:quota_id>/update", governance.quota_update, name="compute-quota-update"),
    path("compute-quotas/<id:quota_id>/delete", governance.quota_delete, name="compute-quota-delete"),
]
