"""Servers the tests start on loopback to stand for third parties (an OpenID Connect provider)."""
