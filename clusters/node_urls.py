"""Portal routes of the node slice (appended to clusters.urls)."""

urlpatterns: list = []
