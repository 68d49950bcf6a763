"""Puts the actor's current team on the request (``request.team``) for portal pages."""

from accounts import access


class CurrentTeamMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.team = None
        user = request.user
        if user.is_authenticated and user.current_team_id is not None and access.can_see(user, user.current_team):
            request.team = user.current_team
        return self.get_response(request)
