"""SSNE (Batra & Shakhnarovich): a nonlinear tanh embedding onto the sphere."""

from .estimator import SSNE, label_pairs

__all__ = ["SSNE", "label_pairs"]
