"""Template context: the actor's teams with roles, for the team switcher."""

from accounts import selectors


def teams(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "my_memberships": list(selectors.memberships_of(actor=user)),
        "current_team": getattr(request, "team", None),
    }
