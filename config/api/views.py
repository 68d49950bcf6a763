"""Answers for API paths that match no endpoint: the same JSON error body, never an HTML page."""

from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt


@csrf_exempt
def api_not_found(request, *args, **kwargs):
    return JsonResponse({"code": "not_found", "message": "No such API endpoint.", "fields": {}}, status=404)
