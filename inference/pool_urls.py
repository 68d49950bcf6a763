"""Portal routes of model pools (included at the site root by ``inference.urls``)."""

from django.urls import path

from inference.views import pools

urlpatterns = [
    path("inference/pools/", pools.pool_list, name="inference-pools"),
    path("inference/pools/<id:pool_id>/assign/", pools.pool_assign, name="inference-pool-assign"),
    path("inference/pools/<id:pool_id>/endpoints/", pools.pool_endpoint_add, name="inference-pool-endpoint"),
]
