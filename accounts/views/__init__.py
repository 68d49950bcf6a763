"""The portal's accounts pages. Views parse the request, validate with the REST serializers, call the
services, read through the selectors and ask ``accounts.access``; they hold no rules of their own."""
