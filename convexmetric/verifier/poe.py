"""Placeholder: filled by the poe verifier."""

KINDS = {}
