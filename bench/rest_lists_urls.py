"""URLs of ``bench.rest_lists_bench``: the product's, plus ``/bench/<list>``, the baseline of each list."""

from django.urls import path

from bench.rest_lists_bench import bare_list
from config.urls import urlpatterns as product

urlpatterns = [path("bench/<slug:name>", bare_list), *product]
