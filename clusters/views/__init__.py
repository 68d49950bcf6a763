"""The clusters portal: the list and detail pages (``pages``), the create wizard (``wizard``), the import flow
(``imports``) and storage volumes (``storage``).

Every view reads through ``clusters.selectors`` and writes through ``clusters.services`` with ``source="portal"``;
forms validate with the REST serializers of ``clusters.api.serializers``, so the portal rejects bad input with the
same codes and messages as REST.
"""
