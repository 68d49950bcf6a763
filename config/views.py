from django.http import HttpResponse


def permission_denied(request, exception=None):
    return HttpResponse(status=403)


def page_not_found(request, exception=None):
    return HttpResponse(status=404)


def server_error(request):
    return HttpResponse(status=500)
