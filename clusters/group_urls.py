"""Portal routes of the group slice (appended to clusters.urls)."""

urlpatterns: list = []
