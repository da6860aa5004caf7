"""Authentication (tokens, client certificates), RBAC authorization and the review APIs, as an apiserver."""
