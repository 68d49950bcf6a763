"""REST foundations shared by every app's API: errors, pagination, parsing, strict serializers."""
