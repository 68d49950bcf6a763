from django.urls import include, path

from clusters.api import views

urlpatterns = [
    path("clusters", views.ClusterListCreateView.as_view(), name="api-clusters"),
    path("clusters/preflight", views.ClusterPreflightView.as_view(), name="api-clusters-preflight"),
    path("clusters/import", views.ClusterImportView.as_view(), name="api-clusters-import"),
    path("clusters/<id:cluster_id>", views.ClusterDetailView.as_view(), name="api-cluster"),
    path("clusters/<id:cluster_id>/delete", views.ClusterDeleteView.as_view(), name="api-cluster-delete"),
    path("clusters/<id:cluster_id>/refresh", views.ClusterRefreshView.as_view(), name="api-cluster-refresh"),
    path("clusters/<id:cluster_id>/operations", views.ClusterOperationListView.as_view(),
         name="api-cluster-operations"),
    path("clusters/<id:cluster_id>/volumes", views.VolumeListCreateView.as_view(), name="api-cluster-volumes"),
    path("clusters/<id:cluster_id>/volumes/<id:volume_id>", views.VolumeDetailView.as_view(),
         name="api-cluster-volume"),
    path("", include("clusters.api.group_urls")),
    path("", include("clusters.api.node_group_urls")),
    path("", include("clusters.api.node_urls")),
    path("", include("clusters.api.feature_urls")),
    path("", include("clusters.api.diagnostic_urls")),
    path("import-rules", views.ImportRuleListCreateView.as_view(), name="api-import-rules"),
    path("import-rules/<id:rule_id>", views.ImportRuleDetailView.as_view(), name="api-import-rule"),
    path("active-cluster", views.ActiveClusterView.as_view(), name="api-active-cluster"),
    path("inspect/regions", views.RegionListView.as_view(), name="api-inspect-regions"),
    path("inspect/zones", views.ZoneListView.as_view(), name="api-inspect-zones"),
    path("inspect/instance-types", views.InstanceTypeListView.as_view(), name="api-inspect-instance-types"),
    path("inspect/quotas", views.QuotaListView.as_view(), name="api-inspect-quotas"),
    path("inspect/training-plans", views.TrainingPlanListView.as_view(), name="api-inspect-training-plans"),
    path("inspect/import-candidates", views.ImportCandidateListView.as_view(), name="api-inspect-import-candidates"),
]
