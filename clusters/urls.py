"""Clusters portal URLs (mounted at the site root, before ``accounts.urls``): the cluster pages here, instance
groups, nodes and managed features from their areas' URL modules."""

from django.urls import include, path

from clusters.views import imports, pages, storage, wizard

urlpatterns = [
    path("clusters/", pages.cluster_list, name="clusters"),
    path("clusters/new/", wizard.cluster_wizard, name="cluster-create"),
    path("clusters/new/<slug:step>/", wizard.cluster_wizard_step, name="cluster-wizard-step"),
    path("clusters/import/", imports.cluster_import, name="cluster-import"),
    path("clusters/import/candidates/", imports.import_candidates, name="cluster-import-candidates"),
    path("clusters/import/rules/", imports.import_rules, name="cluster-import-rules"),
    path("clusters/import/rules/<id:rule_id>/delete/", imports.import_rule_delete, name="cluster-import-rule-delete"),
    path("clusters/<id:cluster_id>/", pages.cluster_detail, name="cluster-detail"),
    path("clusters/<id:cluster_id>/activate/", pages.cluster_activate, name="cluster-activate"),
    path("clusters/<id:cluster_id>/refresh/", pages.cluster_refresh, name="cluster-refresh"),
    path("clusters/<id:cluster_id>/delete/", pages.cluster_delete, name="cluster-delete"),
    path("clusters/<id:cluster_id>/volumes/", storage.volume_create, name="cluster-volume-create"),
    path("clusters/<id:cluster_id>/volumes/<id:volume_id>/delete/", storage.volume_delete,
         name="cluster-volume-delete"),
    path("", include("clusters.group_urls")),
    path("", include("clusters.node_group_urls")),
    path("", include("clusters.node_urls")),
    path("", include("clusters.feature_urls")),
]
