"""Placeholder: filled by the lmnn verifier."""

KINDS = {}
