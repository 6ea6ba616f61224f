"""Betting systems, counting and learned agents built on the pb_gym core (see the open issues)."""
