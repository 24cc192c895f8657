"""Placeholder: filled by the maurer verifier."""

KINDS = {}
