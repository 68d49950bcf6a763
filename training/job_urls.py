"""Portal routes: placeholder filled by its slice."""

urlpatterns: list = []
