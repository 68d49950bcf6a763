"""What every face that a person sees shares: the portal's forms, view helpers and template tags, and the base of
every WebSocket stream.

* ``portal.forms`` — ``SerializerForm`` (a portal form validated by the REST serializer) and ``PAGE_ERRORS``.
* ``portal.views`` — ``portal_view``, ``perform``, ``flash_error``, ``next_url``.
* ``portal.consumers`` — ``FollowingConsumer``, the WebSocket subscription that ``access`` admits and re-checks.
* ``portal.templatetags.portal`` — ``{% load portal %}``: ``can``, ``icon``, ``ago``, ``filter_url``….

Layering: this package sits above ``config`` and ``accounts`` (it asks ``accounts.access``) and below every app's
portal views and consumers, which import it. It imports no domain app, and ``accounts``' own models, services and
permission module never import it (only ``accounts``' pages and team feed do).
"""
