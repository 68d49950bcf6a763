"""Portal routes of the feature slice (appended to clusters.urls)."""

urlpatterns: list = []
