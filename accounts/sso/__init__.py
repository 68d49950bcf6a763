"""Single sign-on with OpenID Connect (docs/identity.md): the provider's configuration (``provider``), the
authentication backend mozilla-django-oidc drives (``backend``), and what a sign-in does to the account — the user
made just in time, the IdP group mappings applied (``services``, ``selectors``)."""
