"""Periodic garbage collection of old workflow pods and finished children, with an audit trail."""
