"""The channel layer's Redis connections, as configured in settings."""

from channels.layers import get_channel_layer
from channels_redis.utils import create_pool


def test_an_idle_subscribers_blocking_read_outlasts_the_layers_wait():
    """A subscriber waits in BZPOPMIN for ``brpop_timeout`` seconds; a socket timeout no longer than that (redis-py
    8's default is 5 s, the same) ends the read with TimeoutError and crashes every idle WebSocket consumer."""
    layer = get_channel_layer()
    for host in layer.hosts:
        assert create_pool(host).connection_kwargs["socket_timeout"] > layer.brpop_timeout
