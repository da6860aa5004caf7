"""Sign-in and sign-out with Django's own auth views and the dashboard's look."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import reverse_lazy

from web.signin import LockoutAuthenticationForm

login = auth_views.LoginView.as_view(
    template_name="dashboard/login.html",
    authentication_form=LockoutAuthenticationForm,
    next_page=reverse_lazy("dashboard:overview"),
    redirect_authenticated_user=True,
)
logout = auth_views.LogoutView.as_view(next_page=reverse_lazy("dashboard:login"))
