"""Django's auth backend: password login as usual; admin permission checks answered by ``access``."""

from django.contrib.auth.backends import ModelBackend

from accounts import access


class AccessBackend(ModelBackend):
    def has_perm(self, user_obj, perm, obj=None):
        return access.can_administer_platform(user_obj)

    def has_module_perms(self, user_obj, app_label):
        return access.can_administer_platform(user_obj)

    def get_all_permissions(self, user_obj, obj=None):
        return set()
