from django.contrib import admin

from .models import NamespaceGrant, NamespacePodSecurity


@admin.register(NamespaceGrant)
class NamespaceGrantAdmin(admin.ModelAdmin):
    list_display = ["namespace", "user", "group", "role", "created"]
    list_filter = ["role"]
    search_fields = ["namespace", "user__username", "group__name"]
    autocomplete_fields = ["user", "group"]
    list_select_related = ["user", "group"]


@admin.register(NamespacePodSecurity)
class NamespacePodSecurityAdmin(admin.ModelAdmin):
    list_display = ["namespace", "level", "service_accounts", "updated"]
    list_filter = ["level"]
    search_fields = ["namespace", "service_accounts"]
