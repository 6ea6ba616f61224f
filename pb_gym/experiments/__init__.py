"""Runnable studies built on pb_gym and agents (one file per experiment)."""
